"""What gym / gymnasium environments give, as data: which environments observe NumPy arrays.

``gym.make("CartPole-v1")`` is an environment whose observations (what ``reset()`` returns,
and what ``step()`` returns first) are NumPy arrays: its observation space is a ``Box``.
Environments that observe integers (``FrozenLake``, ``Taxi``: ``Discrete``), tuples
(``Blackjack``) or dicts (the robotics tasks) are not modelled, nor is an id the file does
not spell (``gym.make(args.env)``): their observations stay unknown.

An environment made elsewhere (another module's ``make_env()``, a wrapper class, a parameter)
is known by the API it shows in the file: where the file reads ``env.observation_space.shape``
(its space has a shape: a ``Box``, as ``Discrete`` has none to index and ``Dict`` / ``Tuple``
spaces have ``None``), ``env.reset()`` and ``env.step(a)`` observe NumPy arrays. ``env`` is
matched by its last name, so ``self.env.observation_space.shape`` in ``__init__`` makes
``self.env.step(a)`` and ``env.step(a)`` of module code environments alike.

Both APIs are read from the code's own shape: ``obs = env.reset()`` (gym < 0.26) and
``obs, info = env.reset()``; ``obs, reward, done, info = env.step(a)`` and the five-item
``obs, reward, terminated, truncated, info``. A file that unpacks an environment's ``step(a)``
into four items uses gym's API before 0.26, where ``reset()`` returns the observation alone,
also where it is not bound to a name (``torch.Tensor([env.reset()])``).
"""

from __future__ import annotations

import ast
import re

from flake8_tensorconv.values import NUMBER, OTHER, Fact, Grad, Kind, Value, ndarray, origin

# Vector environments observe a batch: one array for all their copies.
MAKERS = frozenset({"gym.make", "gymnasium.make", "gym.vector.make", "gymnasium.make_vec"})
WRAPPER_PACKAGES = ("gym.wrappers.", "gymnasium.wrappers.")
# Wrappers whose observations are not the wrapped environment's arrays: a function's result, a dict.
_OBSERVATION_CHANGING_WRAPPERS = frozenset(
    {"TransformObservation", "FilterObservation", "PixelObservationWrapper", "AddRenderObservation", "DictInfoToList"}
)
# Attributes of an environment that are the environment (or the one it wraps).
SAME_ENVIRONMENT_ATTRIBUTES = frozenset({"unwrapped", "env"})
# The methods whose results hold an observation.
OBSERVING_METHODS = frozenset({"reset", "step"})
# An environment known by the shape of its observation space (gym's API: reset() -> obs, or (obs, info)).
SHAPED = Value(kind=Kind.OTHER, grad=Grad.NO, facts=frozenset({Fact.ENVIRONMENT}), instance_of="gym")

# Environment families of gym / gymnasium with a Box observation space: classic control, Box2D, MuJoCo.
_BOX_FAMILIES = frozenset(
    "CartPole MountainCar MountainCarContinuous Pendulum Acrobot LunarLander LunarLanderContinuous BipedalWalker "
    "BipedalWalkerHardcore CarRacing Ant HalfCheetah Hopper Humanoid HumanoidStandup InvertedPendulum "
    "InvertedDoublePendulum Reacher Swimmer Walker2d Pusher".split()
)
# Atari games (frames or RAM, both arrays), also spelled `PongNoFrameskip-v4`, `Pong-ramDeterministic-v4`, `ALE/Pong-v5`.
_ATARI_GAMES = frozenset(
    "Alien Amidar Assault Asterix Asteroids Atlantis BankHeist BattleZone BeamRider Bowling Boxing Breakout Centipede "
    "ChopperCommand CrazyClimber DemonAttack DoubleDunk Enduro FishingDerby Freeway Frostbite Gopher Gravitar IceHockey "
    "Jamesbond Kangaroo Krull KungFuMaster MontezumaRevenge MsPacman NameThisGame Pitfall Pong PrivateEye Qbert "
    "Riverraid RoadRunner Robotank Seaquest Skiing Solaris SpaceInvaders StarGunner Tennis TimePilot Tutankham "
    "UpNDown Venture VideoPinball WizardOfWor Zaxxon".split()
)
_VERSION = re.compile(r"-v\d+$")
_ATARI_VARIANTS = re.compile(r"(-ram)?(NoFrameskip|Deterministic)?$")


def observes_arrays(environment_id: str) -> bool:
    """Whether ``gym.make(environment_id)`` observes NumPy arrays (its observation space is a ``Box``)."""
    if environment_id.startswith("ALE/"):
        return True
    family = _VERSION.sub("", environment_id)
    if family in _BOX_FAMILIES:
        return True
    return _ATARI_VARIANTS.sub("", family) in _ATARI_GAMES


def made(qualname: str, node: ast.Call, spelled: str | None) -> Value:
    """``gym.make(id, ...)``: an environment observing arrays when the id (``spelled``, the string the file writes
    there or binds the name there to) says so, else some other object."""
    if spelled is not None and observes_arrays(spelled):
        library = qualname.partition(".")[0]  # gymnasium's reset() always returns (observation, info)
        return Value(kind=Kind.OTHER, grad=Grad.NO, facts=frozenset({Fact.ENVIRONMENT}), instance_of=library)
    return OTHER


def id_argument(node: ast.Call) -> ast.expr | None:
    """The environment id a maker is given."""
    return node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "id"), None)


def wrapped(qualname: str, wrapped_value: Value) -> Value:
    """``gym.wrappers.TimeLimit(env, ...)``: observes what the wrapped environment does, unless it changes that."""
    if Fact.ENVIRONMENT in wrapped_value.facts and qualname.rpartition(".")[2] not in _OBSERVATION_CHANGING_WRAPPERS:
        return wrapped_value
    return OTHER


def method_result(environment: Value, name: str, node: ast.Call, four_item_step: bool = False) -> Value | None:
    """What ``env.reset()`` / ``env.step(action)`` of an environment observing arrays returns (None: other methods).

    ``four_item_step``: the file unpacks this environment's ``step(a)`` into four items, gym's API before 0.26."""
    observation = ndarray(array_origin=origin(node))
    if name == "reset":
        if environment.instance_of == "gymnasium":
            return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(observation, OTHER))  # always (observation, info)
        if four_item_step and not any(keyword.arg in ("return_info", None) for keyword in node.keywords):
            return observation  # gym < 0.26 returns the observation alone (unless asked for the info too)
        # (observation, info); `obs = env.reset()` of gym < 0.26 binds the observation itself (see `unpacked`).
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(observation, OTHER), facts=frozenset({Fact.ENV_RESULT}))
    if name == "step":
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, facts=frozenset({Fact.ENV_RESULT}), fields=(("observation", observation),))
    return None


def unpacked(result: Value, target: ast.expr) -> Value:
    """What a reset / step result bound to ``target`` holds, read from the shape of the target."""
    observation = result.elements[0] if result.elements else result.field("observation")
    if observation is None:  # a join of a reset's and a step's result: nothing known of the items
        return result.with_(facts=result.facts - {Fact.ENV_RESULT})
    if isinstance(target, ast.Name) and result.elements is not None:
        return observation  # gym < 0.26: `obs = env.reset()`
    if isinstance(target, (ast.Tuple, ast.List)) and result.elements is None and len(target.elts) in (4, 5):
        if not any(isinstance(element, ast.Starred) for element in target.elts):
            # reward (a number, or a NumPy scalar: not followed), done flag(s), info
            reward = NUMBER.with_(kind=Kind.UNKNOWN)
            return result.with_(elements=(observation, reward, *([OTHER] * (len(target.elts) - 2))))
    return result
