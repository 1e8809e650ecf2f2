#!/usr/bin/env python3
"""Side-by-side benchmark: one contactlab scene in contactlab, MuJoCo and PyBullet.

Reads a contactlab RON scene (rigid, spatial: spheres, boxes, capsules, fixed
bodies, half-spaces), builds the same scene in MuJoCo (MJCF) and PyBullet, steps
each for the first `--seconds` of the scene at the scene's h, and prints a
markdown table of time per step, times real time and deepest penetration.

Optional and manual: not run by CI, not part of the cargo build. See README.md.

    python3 benches/peers/peers.py SCENE.ron [SCENE.ron ...] \
        --seconds 0.5 --rounds 3 --contactlab PATH
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ENGINES = ("contactlab", "mujoco", "mujoco-granular", "pybullet")


class Untranslatable(Exception):
    """A scene field this benchmark cannot express in the peer engines."""


# --------------------------------------------------------------------------
# RON: the subset scene files use (serde's RON as contactlab writes it).
# --------------------------------------------------------------------------


@dataclass
class Struct:
    """`Name(field: value, ...)` or `(field: value, ...)`."""

    name: str | None
    fields: dict


@dataclass
class Variant:
    """`Name(value, ...)` (tuple variant) or a bare `Name` (unit variant)."""

    name: str
    args: list


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<number>[+-]?(?:\d[\d_]*\.?[\d_]*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf\b|NaN\b))
  | (?P<ident>r\#[A-Za-z0-9_.+\-]+|[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[()\[\]{},:])
    """,
    re.VERBOSE | re.DOTALL,
)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def _unescape(body: str) -> str:
    def one(m):
        e = m.group(1)
        if e.startswith("u{"):
            return chr(int(e[2:-1], 16))
        if e.startswith("x"):
            return chr(int(e[1:], 16))
        return _ESCAPES.get(e, e)

    return re.sub(r"\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)", one, body)


def _tokens(text: str):
    pos, out = 0, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            line = text.count("\n", 0, pos) + 1
            raise ValueError(f"RON: unexpected {text[pos:pos + 20]!r} at line {line}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        out.append((kind, m.group(kind), text.count("\n", 0, m.start()) + 1))
    return out


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ("eof", "", -1)

    def take(self, value=None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise ValueError(f"RON: expected {value!r}, found {tok[1]!r} at line {tok[2]}")
        self.i += 1
        return tok

    def value(self):
        kind, text, line = self.peek()
        if kind == "string":
            self.take()
            return _unescape(text[1:-1])
        if kind == "number":
            self.take()
            t = text.replace("_", "")
            if re.fullmatch(r"[+-]?\d+", t):
                return int(t)
            return float(t)
        if text == "[":
            self.take()
            items = []
            while self.peek()[1] != "]":
                items.append(self.value())
                if self.peek()[1] == ",":
                    self.take()
            self.take("]")
            return items
        if text == "(":
            return self.parens(None)
        if text == "{":
            self.take()
            entries = {}
            while self.peek()[1] != "}":
                key = self.value()
                self.take(":")
                entries[key] = self.value()
                if self.peek()[1] == ",":
                    self.take()
            self.take("}")
            return entries
        if kind == "ident":
            self.take()
            name = text[2:] if text.startswith("r#") else text
            if name in ("true", "false"):
                return name == "true"
            if self.peek()[1] == "(":
                return self.parens(name)
            return Variant(name, [])
        raise ValueError(f"RON: unexpected {text!r} at line {line}")

    def parens(self, name):
        self.take("(")
        # A struct if the first item is `ident :`.
        if self.peek()[0] == "ident" and self.peek(1)[1] == ":":
            fields = {}
            while self.peek()[1] != ")":
                key = self.take()[1]
                key = key[2:] if key.startswith("r#") else key
                self.take(":")
                fields[key] = self.value()
                if self.peek()[1] == ",":
                    self.take()
            self.take(")")
            return Struct(name, fields)
        items = []
        while self.peek()[1] != ")":
            items.append(self.value())
            if self.peek()[1] == ",":
                self.take()
        self.take(")")
        if name is None:
            return tuple(items)
        if name == "Some" and len(items) == 1:
            return items[0]
        # A newtype variant wrapping an anonymous struct, e.g. Rigid((...)).
        return Variant(name, items)


def parse_ron(text: str):
    p = _Parser(text)
    v = p.value()
    if p.peek()[0] != "eof":
        raise ValueError(f"RON: trailing text at line {p.peek()[2]}")
    return v


# --------------------------------------------------------------------------
# The scene, as the peers need it.
# --------------------------------------------------------------------------


@dataclass
class Body:
    name: str
    shape: str  # sphere | box | capsule
    dims: tuple  # sphere (r,), box (hx, hy, hz), capsule (half_length, r)
    mass: float
    inertia: tuple  # principal, body axes
    pos: tuple
    quat: tuple  # (w, x, y, z)
    vel: tuple = (0.0, 0.0, 0.0)
    angvel: tuple = (0.0, 0.0, 0.0)  # world axes
    fixed: bool = False


@dataclass
class Surface:
    name: str
    normal: tuple  # unit
    point: tuple
    extent: float


@dataclass
class Scene:
    path: Path
    name: str
    dt: float
    mu: float
    gravity: tuple
    stepper: str
    solver: str
    bodies: list = field(default_factory=list)
    surfaces: list = field(default_factory=list)

    @property
    def moving(self):
        return [b for b in self.bodies if not b.fixed]


def _vec(v, n, where):
    if not isinstance(v, (tuple, list)) or len(v) != n:
        raise Untranslatable(f"{where}: expected {n} numbers, found {v!r}")
    return tuple(float(x) for x in v)


def _normalize(v):
    n = math.sqrt(sum(x * x for x in v))
    if n == 0:
        raise ValueError("zero vector")
    return tuple(x / n for x in v)


def _quat_axis_angle(axis, angle):
    a = _normalize(axis)
    s = math.sin(0.5 * angle)
    return (math.cos(0.5 * angle), a[0] * s, a[1] * s, a[2] * s)


def _quat_rotate(q, v):
    w, x, y, z = q
    # v' = v + 2 w (u × v) + 2 u × (u × v), u = (x, y, z)
    ux, uy, uz = x, y, z
    cx, cy, cz = uy * v[2] - uz * v[1], uz * v[0] - ux * v[2], ux * v[1] - uy * v[0]
    dx, dy, dz = uy * cz - uz * cy, uz * cx - ux * cz, ux * cy - uy * cx
    return (v[0] + 2 * (w * cx + dx), v[1] + 2 * (w * cy + dy), v[2] + 2 * (w * cz + dz))


def _quat_conj(q):
    return (q[0], -q[1], -q[2], -q[3])


def _quat_z_to(n):
    """Unit quaternion (w, x, y, z) taking +z to the unit vector n."""
    c = n[2]
    if c < -1 + 1e-12:
        return (0.0, 1.0, 0.0, 0.0)
    # axis z × n = (-n_y, n_x, 0), half-angle form
    w = math.sqrt(0.5 * (1 + c))
    s = 0.5 / w
    return (w, -n[1] * s, n[0] * s, 0.0)


def default_inertia(shape, dims, mass):
    """contactlab's `model::rigid::default_inertia` (spatial)."""
    if shape == "sphere":
        i = 0.4 * mass * dims[0] ** 2
        return (i, i, i)
    if shape == "capsule":
        half_length, r = dims
        length = 2 * (half_length + r)
        across = mass * (length * length / 12 + r * r / 4)
        return (0.5 * mass * r * r, across, across)
    a, b, c = (2 * h for h in dims)
    return (mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12)


_BODY_FIELDS = {
    "name", "shape", "mass", "inertia", "position", "orientation", "velocity",
    "angular_velocity", "color", "restitution", "tangential_restitution", "fixed",
}
_SURFACE_FIELDS = {"name", "normal", "point", "extent", "restitution", "tangential_restitution"}
_RIGID_FIELDS = {"dimension", "gravity", "bodies", "surfaces", "joints", "elements", "loads"}
# Params the peers take (dt, mu) or that only steer contactlab's own solve.
_PARAMS_KNOWN = {
    "dt", "duration", "mu", "restitution", "damping", "stiffness", "edges", "stepper",
    "ncp_iterations", "solver", "tolerance", "max_iterations", "friction_cone", "strict",
}


def _check_fields(fields: dict, allowed, where: str, elastic: bool) -> None:
    """Refuses a field peers.py does not know, and under Moreau-Jean's
    impacts a nonzero restitution, which the peers' contacts cannot express."""
    for key in fields:
        if key not in allowed:
            raise Untranslatable(f"{where}.{key}: not understood by peers.py")
    if elastic:
        for key in ("restitution", "tangential_restitution"):
            value = fields.get(key)
            if value not in (None, 0, 0.0) and not isinstance(value, Variant):
                raise Untranslatable(f"{where}.{key}: restitution is not translated")


def load_scene(path: Path) -> Scene:
    top = parse_ron(path.read_text(encoding="utf-8"))
    if not isinstance(top, Struct) or top.name not in (None, "Scene"):
        raise Untranslatable(f"{path}: not a `Scene(...)` file")
    f = top.fields
    params = f.get("params", Struct(None, {})).fields
    for key in params:
        if key not in _PARAMS_KNOWN:
            raise Untranslatable(f"{path}: params.{key}: not understood by peers.py")
    dt = float(params.get("dt", 0.0025))
    mu = float(params.get("mu", 0.5))
    stepper = params.get("stepper", Variant("stewart-trinkle", [])).name
    solver = params.get("solver", Variant("lemke", [])).name
    restitution = float(params.get("restitution", 0.0))
    elastic = stepper == "moreau-jean"  # the only stepper with an impact law
    if elastic and restitution != 0.0:
        raise Untranslatable(
            f"{path}: params.restitution = {restitution}: impacts with restitution are not translated"
        )
    system = f.get("system")
    if not isinstance(system, Variant) or system.name != "Rigid" or len(system.args) != 1:
        kind = system.name if isinstance(system, Variant) else system
        raise Untranslatable(f"{path}: system: {kind}: only Rigid systems are translated")
    rigid = system.args[0].fields
    for key in rigid:
        if key not in _RIGID_FIELDS:
            raise Untranslatable(f"{path}: system.{key}: not understood by peers.py")
    dim = rigid.get("dimension")
    if not isinstance(dim, Variant) or dim.name != "Spatial":
        raise Untranslatable(f"{path}: system.dimension: {getattr(dim, 'name', dim)}: only Spatial scenes are translated")
    for key in ("joints", "elements", "loads"):
        if rigid.get(key):
            raise Untranslatable(f"{path}: system.{key}: {len(rigid[key])} given; peers.py translates none")
    scene = Scene(
        path=path,
        name=str(f.get("name", path.stem)),
        dt=dt,
        mu=mu,
        gravity=_vec(rigid["gravity"], 3, "system.gravity"),
        stepper=stepper,
        solver=solver,
    )
    for i, b in enumerate(rigid.get("bodies", [])):
        bf = b.fields
        name = bf.get("name", f"#{i}")
        where = f"{path}: bodies[{i}] ({name})"
        _check_fields(bf, _BODY_FIELDS, where, elastic)
        shape = bf["shape"]
        if isinstance(shape, Struct) and shape.name == "Sphere":
            kind, dims = "sphere", (float(shape.fields["radius"]),)
        elif isinstance(shape, Struct) and shape.name == "Box":
            kind, dims = "box", _vec(shape.fields["half_extents"], 3, f"{where}.shape.half_extents")
        elif isinstance(shape, Struct) and shape.name == "Capsule":
            kind, dims = "capsule", (float(shape.fields["half_length"]), float(shape.fields["radius"]))
        else:
            raise Untranslatable(f"{where}.shape: {getattr(shape, 'name', shape)}: not translated")
        mass = float(bf["mass"])
        inertia = bf.get("inertia")
        if isinstance(inertia, Variant) and inertia.name == "None":
            inertia = None
        inertia = _vec(inertia, 3, f"{where}.inertia") if inertia is not None else default_inertia(kind, dims, mass)
        o = bf.get("orientation")
        if o is None:
            quat = (1.0, 0.0, 0.0, 0.0)
        elif isinstance(o, Variant) and o.name == "Angle":
            quat = _quat_axis_angle((0, 0, 1), float(o.args[0]))
        elif isinstance(o, Variant) and o.name == "AxisAngle":
            quat = _quat_axis_angle(_vec(o.args[0], 3, f"{where}.orientation"), float(o.args[1]))
        elif isinstance(o, Variant) and o.name == "Quaternion":
            quat = _normalize(_vec(o.args[0], 4, f"{where}.orientation"))
        else:
            raise Untranslatable(f"{where}.orientation: {o!r}: not translated")
        fixed = bool(bf.get("fixed", False))
        scene.bodies.append(
            Body(
                name=str(name),
                shape=kind,
                dims=dims,
                mass=mass,
                inertia=inertia,
                pos=_vec(bf["position"], 3, f"{where}.position"),
                quat=quat,
                vel=_vec(bf.get("velocity", (0, 0, 0)), 3, f"{where}.velocity"),
                angvel=_vec(bf.get("angular_velocity", (0, 0, 0)), 3, f"{where}.angular_velocity"),
                fixed=fixed,
            )
        )
    for i, s in enumerate(rigid.get("surfaces", [])):
        sf = s.fields
        where = f"{path}: surfaces[{i}] ({sf.get('name', '?')})"
        _check_fields(sf, _SURFACE_FIELDS, where, elastic)
        scene.surfaces.append(
            Surface(
                name=str(sf["name"]),
                normal=_normalize(_vec(sf["normal"], 3, f"{where}.normal")),
                point=_vec(sf.get("point", (0, 0, 0)), 3, f"{where}.point"),
                extent=float(sf.get("extent", 5.0)),
            )
        )
    if not scene.moving:
        raise Untranslatable(f"{path}: no moving body")
    return scene


def steps_for(seconds: float, dt: float) -> int:
    """contactlab's `limits::steps_needed`."""
    return max(0, math.ceil(seconds / dt - 1e-9))


# --------------------------------------------------------------------------
# One run's result.
# --------------------------------------------------------------------------


@dataclass
class Result:
    seconds_per_step: float | None  # None: failed / over budget
    deepest: float | None  # deepest penetration, m (>= 0)
    final_z: list | None = None  # final heights of the moving bodies, m
    note: str = ""
    over_budget: bool = False  # stopped at --budget: ms/step > budget / steps


def _z_summary(zs):
    if not zs:
        return "n/a"
    s = sorted(zs)
    return f"z min {s[0]:.3f} / median {statistics.median(s):.3f} / max {s[-1]:.3f} m"


# --------------------------------------------------------------------------
# contactlab, through its CLI.
# --------------------------------------------------------------------------


def contactlab_run(binary, scene: Scene, seconds, threads, extra, budget, every, tmp):
    out = Path(tmp) / "lab.csv"
    cmd = [
        str(binary), "run", str(scene.path), "--duration", repr(seconds),
        "--threads", str(threads), "--every", str(every), "--csv", str(out), *extra,
    ]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"over the {budget:g} s budget (killed): {shlex.join(cmd)}")
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"contactlab failed ({shlex.join(cmd)}):\n{proc.stderr.strip()}")
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    header, data = rows[0], rows[1:]
    return wall, header, data, proc.stderr.strip()


# The fewest steps whose time the lab's difference of two runs resolves.
MIN_TIMED_STEPS = 50


def run_contactlab(binary, scene: Scene, seconds, threads, extra, budget, want_gap):
    steps = steps_for(seconds, scene.dt)
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        # Start-up, parse, first row and one step: subtracted.
        base, _, _, _ = contactlab_run(binary, scene, scene.dt, threads, extra, budget, 1, tmp)
        # The timed run writes the t = 0 row and the last one only.
        wall, header, data, err = contactlab_run(binary, scene, seconds, threads, extra, budget, max(steps, 1), tmp)
        per_step = (wall - base) / max(steps - 1, 1)
        zcols = [header.index(f"{b.name}.z") for b in scene.moving]
        final_z = [float(data[-1][c]) for c in zcols]
        deepest = None
        if want_gap:
            # Untimed pass writing every step's row: min_gap is the end-of-step
            # gap (the run is deterministic, bit for bit, whatever the threads).
            _, header, data, _ = contactlab_run(binary, scene, seconds, threads, extra, budget, 1, tmp)
            g = header.index("min_gap")
            gaps = [float(r[g]) for r in data if r[g] not in ("", "NaN", "inf")]
            deepest = max(0.0, -min(gaps)) if gaps else 0.0
    note = err.splitlines()[-1] if err else ""
    return Result(per_step, deepest, final_z, note)


# --------------------------------------------------------------------------
# MuJoCo.
# --------------------------------------------------------------------------


def _f(*xs):
    return " ".join(repr(float(x)) for x in xs)


def mjcf(scene: Scene, granular: bool) -> str:
    mu = scene.mu
    friction = _f(mu, 0.005, 0.0001)  # only the first (sliding) is used at condim 3
    if granular:
        option = (
            f'<option timestep="{scene.dt!r}" gravity="{_f(*scene.gravity)}" '
            f'cone="elliptic" solver="PGS" iterations="30"/>'
        )
    else:
        option = f'<option timestep="{scene.dt!r}" gravity="{_f(*scene.gravity)}"/>'

    def geom(b: Body, pos=None, quat=None):
        where = ""
        if pos is not None:
            where = f' pos="{_f(*pos)}" quat="{_f(*quat)}"'
        if b.shape == "sphere":
            return f'<geom type="sphere" size="{_f(*b.dims)}" friction="{friction}"{where}/>'
        if b.shape == "box":
            return f'<geom type="box" size="{_f(*b.dims)}" friction="{friction}"{where}/>'
        hl, r = b.dims
        a, c = (-hl, 0.0, 0.0), (hl, 0.0, 0.0)
        if pos is not None:
            ra, rc = _quat_rotate(quat, a), _quat_rotate(quat, c)
            a = tuple(p + d for p, d in zip(pos, ra))
            c = tuple(p + d for p, d in zip(pos, rc))
        return f'<geom type="capsule" fromto="{_f(*a, *c)}" size="{r!r}" friction="{friction}"/>'

    world = []
    for s in scene.surfaces:
        e = s.extent
        world.append(
            f'<geom type="plane" size="{_f(e, e, 0.1)}" pos="{_f(*s.point)}" '
            f'quat="{_f(*_quat_z_to(s.normal))}" friction="{friction}"/>'
        )
    for b in scene.bodies:
        if b.fixed:
            world.append(geom(b, b.pos, b.quat))
    for i, b in enumerate(scene.bodies):
        if b.fixed:
            continue
        world.append(
            f'<body name="b{i}" pos="{_f(*b.pos)}" quat="{_f(*b.quat)}"><freejoint/>'
            f'<inertial pos="0 0 0" mass="{b.mass!r}" diaginertia="{_f(*b.inertia)}"/>'
            f"{geom(b)}</body>"
        )
    body = "\n".join(world)
    return f'<mujoco model="peers">\n{option}\n<size memory="256M"/>\n<worldbody>\n{body}\n</worldbody>\n</mujoco>\n'


def run_mujoco(scene: Scene, seconds, granular, budget):
    import mujoco
    import numpy as np

    m = mujoco.MjModel.from_xml_string(mjcf(scene, granular))
    d = mujoco.MjData(m)
    # Initial velocities: free joint qvel = (linear, world; angular, body axes).
    moving = scene.moving
    for k, b in enumerate(moving):
        w = _quat_rotate(_quat_conj(b.quat), b.angvel)
        d.qvel[6 * k:6 * k + 6] = (*b.vel, *w)
    mujoco.mj_forward(m, d)
    steps = steps_for(seconds, scene.dt)
    deepest = 0.0
    timed = 0.0
    for k in range(steps):
        t0 = time.perf_counter()
        mujoco.mj_step(m, d)
        timed += time.perf_counter() - t0
        # Untimed: the contacts mj_step found (at the step's start state).
        if d.ncon:
            deepest = max(deepest, -float(np.min(d.contact.dist[: d.ncon])))
        if timed > budget:
            return Result(None, None, None, f"over the {budget:g} s budget after {k + 1} of {steps} steps", True)
    mujoco.mj_forward(m, d)  # the final state's contacts, untimed
    if d.ncon:
        deepest = max(deepest, -float(np.min(d.contact.dist[: d.ncon])))
    final_z = [float(d.qpos[7 * k + 2]) for k in range(len(moving))]
    notes = []
    for w in ("mjWARN_CONTACTFULL", "mjWARN_CNSTRFULL", "mjWARN_BADQACC"):
        n = d.warning[getattr(mujoco.mjtWarning, w)].number
        if n:
            notes.append(f"{w} x{n}")
    return Result(timed / max(steps, 1), deepest, final_z, ", ".join(notes))


# --------------------------------------------------------------------------
# PyBullet.
# --------------------------------------------------------------------------


def import_pybullet():
    """pybullet, imported with its C-level "build time" line sent to stderr
    (stdout carries the table only)."""
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    import ctypes

    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        import pybullet

        ctypes.CDLL(None).fflush(None)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return pybullet


def _xyzw(q):
    return (q[1], q[2], q[3], q[0])


def run_pybullet(scene: Scene, seconds, budget):
    p = import_pybullet()
    cid = p.connect(p.DIRECT)
    try:
        p.setGravity(*scene.gravity, physicsClientId=cid)
        p.setTimeStep(scene.dt, physicsClientId=cid)
        # Bullet multiplies the two sides' coefficients: √μ each gives μ.
        lateral = math.sqrt(scene.mu)
        capsule_frame = _xyzw(_quat_axis_angle((0, 1, 0), math.pi / 2))  # Bullet's z-axis capsule along x
        for s in scene.surfaces:
            shape = p.createCollisionShape(p.GEOM_PLANE, planeNormal=s.normal, physicsClientId=cid)
            uid = p.createMultiBody(0, shape, -1, s.point, (0, 0, 0, 1), physicsClientId=cid)
            p.changeDynamics(uid, -1, lateralFriction=lateral, physicsClientId=cid)
        ids = []
        for b in scene.bodies:
            if b.shape == "sphere":
                shape = p.createCollisionShape(p.GEOM_SPHERE, radius=b.dims[0], physicsClientId=cid)
            elif b.shape == "box":
                shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=b.dims, physicsClientId=cid)
            else:
                hl, r = b.dims
                shape = p.createCollisionShape(
                    p.GEOM_CAPSULE, radius=r, height=2 * hl,
                    collisionFrameOrientation=capsule_frame, physicsClientId=cid,
                )
            uid = p.createMultiBody(
                0.0 if b.fixed else b.mass, shape, -1, b.pos, _xyzw(b.quat), physicsClientId=cid
            )
            kw = {} if b.fixed else {"localInertiaDiagonal": b.inertia}
            p.changeDynamics(uid, -1, lateralFriction=lateral, physicsClientId=cid, **kw)
            if not b.fixed:
                p.resetBaseVelocity(uid, b.vel, b.angvel, physicsClientId=cid)
                ids.append(uid)
        steps = steps_for(seconds, scene.dt)
        deepest = 0.0
        timed = 0.0
    
        def contacts_deepest():
            pts = p.getContactPoints(physicsClientId=cid)
            return max((-c[8] for c in pts), default=0.0)

        for k in range(steps):
            t0 = time.perf_counter()
            p.stepSimulation(physicsClientId=cid)
            timed += time.perf_counter() - t0
            # Untimed: the manifold points of this step (contactDistance < 0: overlap).
            deepest = max(deepest, contacts_deepest())
            if timed > budget:
                return Result(None, None, None, f"over the {budget:g} s budget after {k + 1} of {steps} steps", True)
        p.performCollisionDetection(physicsClientId=cid)
        deepest = max(deepest, contacts_deepest())
        final_z = [p.getBasePositionAndOrientation(u, physicsClientId=cid)[0][2] for u in ids]
        return Result(timed / max(steps, 1), max(0.0, deepest), final_z)
    finally:
        p.disconnect(physicsClientId=cid)


# --------------------------------------------------------------------------
# Driver.
# --------------------------------------------------------------------------


def _fmt(x, digits=3):
    if x is None:
        return "—"
    if x == 0:
        return "0"
    return f"{x:.{digits}g}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenes", nargs="+", type=Path, help="contactlab RON scene files")
    ap.add_argument("--seconds", type=float, default=0.5, help="simulated time from the scene's start, s (default 0.5)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds over the engines; medians are reported (default 3)")
    ap.add_argument(
        "--contactlab", type=Path,
        default=Path.home() / ".cache/contactlab-target/release/contactlab",
        help="the contactlab binary (default ~/.cache/contactlab-target/release/contactlab)",
    )
    ap.add_argument("--lab-threads", type=int, default=1, help="contactlab --threads (default 1, as the peers)")
    ap.add_argument("--lab-args", default="", help="extra flags for `contactlab run`, one shell-quoted string")
    ap.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated subset of {','.join(ENGINES)}")
    ap.add_argument(
        "--budget", type=float, default=60.0,
        help="seconds of stepping one engine run may take before it is stopped and dropped; "
        "the table then shows ms/step > budget / steps (default 60)",
    )
    args = ap.parse_args(argv)

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    for e in engines:
        if e not in ENGINES:
            ap.error(f"--engines: unknown engine {e!r} (known: {', '.join(ENGINES)})")
    if "contactlab" in engines and not os.access(args.contactlab, os.X_OK):
        ap.error(f"--contactlab: {args.contactlab} is not an executable")
    if args.rounds < 1 or args.seconds <= 0:
        ap.error("--rounds must be >= 1 and --seconds > 0")
    extra = shlex.split(args.lab_args)

    scenes = []
    for path in args.scenes:
        try:
            scenes.append(load_scene(path))
        except Untranslatable as e:
            print(f"peers.py: cannot translate {e}", file=sys.stderr)
            return 2
        except (ValueError, KeyError) as e:
            print(f"peers.py: cannot read {path}: {e}", file=sys.stderr)
            return 2

    if "contactlab" in engines:
        # The lab's time per step is the difference of two runs (the whole
        # run less a one-step run): on a short run that is start-up noise.
        for scene in scenes:
            steps = steps_for(args.seconds, scene.dt)
            if steps < MIN_TIMED_STEPS:
                ap.error(
                    f"--seconds {args.seconds:g} is {steps} steps of {scene.path.name} (h = {scene.dt:g} s): "
                    f"contactlab is timed over at least {MIN_TIMED_STEPS} steps"
                )

    versions = []
    if "contactlab" in engines:
        v = subprocess.run([str(args.contactlab), "--version"], capture_output=True, text=True).stdout.strip()
        versions.append(v or "contactlab")
    if any(e.startswith("mujoco") for e in engines):
        import mujoco

        versions.append(f"MuJoCo {mujoco.__version__}")
    if "pybullet" in engines:
        versions.append(f"PyBullet API {import_pybullet().getAPIVersion()}")

    rows = []
    for scene in scenes:
        steps = steps_for(args.seconds, scene.dt)
        label = f"{scene.path.name} ({len(scene.moving)} moving, {len(scene.bodies) - len(scene.moving)} fixed; h = {scene.dt:g} s, {steps} steps)"
        times = {e: [] for e in engines}
        deepest = {e: None for e in engines}
        notes = {e: set() for e in engines}
        dropped = set()
        over = set()
        for rnd in range(args.rounds):
            for e in engines:
                if e in dropped:
                    continue
                try:
                    if e == "contactlab":
                        r = run_contactlab(
                            args.contactlab, scene, args.seconds, args.lab_threads, extra,
                            args.budget, want_gap=(rnd == 0),
                        )
                    elif e == "mujoco":
                        r = run_mujoco(scene, args.seconds, False, args.budget)
                    elif e == "mujoco-granular":
                        r = run_mujoco(scene, args.seconds, True, args.budget)
                    else:
                        r = run_pybullet(scene, args.seconds, args.budget)
                except TimeoutError as err:
                    r = Result(None, None, None, str(err), True)
                except RuntimeError as err:
                    r = Result(None, None, None, str(err))
                if r.note:
                    notes[e].add(r.note)
                if r.seconds_per_step is None:
                    dropped.add(e)
                    if r.over_budget:
                        over.add(e)
                    print(f"[{scene.path.name}] {e}: dropped: {r.note}", file=sys.stderr)
                    continue
                times[e].append(r.seconds_per_step)
                if r.deepest is not None:
                    deepest[e] = r.deepest if deepest[e] is None else max(deepest[e], r.deepest)
                print(
                    f"[{scene.path.name}] round {rnd + 1} {e}: {1e3 * r.seconds_per_step:.3f} ms/step, "
                    f"{_z_summary(r.final_z)} at t = {steps * scene.dt:g} s"
                    + (f"; {r.note}" if r.note else ""),
                    file=sys.stderr,
                )
        for e in engines:
            name = {
                "contactlab": f"contactlab ({scene.stepper}, {scene.solver})",
                "mujoco": "MuJoCo default",
                "mujoco-granular": "MuJoCo granular",
                "pybullet": "PyBullet",
            }[e]
            if times[e] and e not in dropped:
                ms = 1e3 * statistics.median(times[e])
                rt = scene.dt / statistics.median(times[e])
                pen = None if deepest[e] is None else 1e3 * deepest[e]
                rows.append((label, name, _fmt(ms), _fmt(rt), _fmt(pen)))
            elif e in over:
                # The whole run would take more than the budget: a bound.
                bound = args.budget / max(steps, 1)
                rows.append((label, name, f"> {_fmt(1e3 * bound)} (budget)", f"< {_fmt(scene.dt / bound)}", "—"))
            else:
                rows.append((label, name, "failed", "—", "—"))
                for n in notes[e]:
                    print(f"[{scene.path.name}] {e}: {n}", file=sys.stderr)
            label = ""  # the scene once per group

    print("$ " + shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv])))
    print(f"<!-- {', '.join(versions)}; {args.rounds} round(s), medians; contactlab --threads {args.lab_threads} -->")
    print()
    print("| scene | engine | ms/step | × real time | deepest penetration, mm |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
