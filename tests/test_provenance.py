"""Provenance patterns measured on real code (bench/precision.py): what is evidence of risk, what is provably safe.

Each case is a snippet; a line ending in ``# expect: CODES`` must be reported with exactly those
codes, every other line with none. Only the default rules run.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source
from flake8_tensorconv.source import Source

CASES = {
    "a_method_decorated_with_no_grad_returns_what_holds_no_grad_and_a_dict_filled_there_holds_none": """
        import torch

        class Synthesizer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.decoder = torch.nn.Linear(4, 4)

            @torch.no_grad()
            def inference(self, x):
                outputs = {}
                outputs["model_outputs"] = self.decoder(x).transpose(0, 1)
                outputs["durations"] = x.sum(1)
                return outputs

            @torch.inference_mode()
            def embed(self, x):
                return self.decoder(x)

            def train_outputs(self, x):
                outputs = {}
                outputs["energy"] = x.sum(1).detach()
                outputs["model_outputs"] = self.decoder(x)
                return outputs

            def logs(self, x):
                spec = self.inference(x)["model_outputs"][0].data.cpu().numpy()
                emb = self.embed(x).data.cpu().numpy()
                # A dict that also holds what requires grad: its items are not known, the chain is the evidence.
                outputs = self.train_outputs(x)
                energy = outputs["energy"].data.cpu().numpy()  # expect: TCV104
                return spec, emb, energy
    """,
    "a_cpu_device_kept_on_self_counts_only_where_no_other_method_rebinds_it": """
        import torch

        class Evaluator:
            def __init__(self, model, device):
                self.model = model.cuda()
                self.cpu_device = torch.device("cpu")
                self.target = "cpu"
                self.out_device = device

            def retarget(self, device):
                self.target = device

            def process(self, x):
                out = self.model(x.cuda()).detach()
                a = out.to(self.cpu_device).numpy()
                b = out.to(self.target).numpy()  # expect: TCV102
                c = out.to(self.out_device).numpy()  # expect: TCV102
                return a, b, c
    """,
    "what_torch_from_numpy_accepted_is_an_array": """
        import torch

        def rollout(env, policy, steps):
            states, seen = [], []
            s = env.reset()
            for _ in range(steps):
                seen.append(s)  # before the check: of unknown kind on the first step
                action = policy(torch.from_numpy(s).float())
                states.append(s)
                s, reward, done, info = env.step(action)
            batch = torch.tensor(states)  # expect: TCV204
            return batch, torch.tensor(seen)
    """,
    "a_framework_string_is_a_guard_only_where_the_file_imports_that_framework": """
        import torch

        class Explainer:
            def __init__(self, model):
                self.model = model
                self.model_type = "tf"

            def predict(self, x):
                if self.model_type == "tf":
                    return self.model(x).numpy()  # expect: TCV101
                return self.model(x).detach().numpy()
    """,
    "a_framework_guard_reads_only_strings_that_name_frameworks": """
        import tensorflow as tf
        import torch

        class Explainer:
            def __init__(self, model, mode):
                self.model = model
                self.mode = mode

            def predict(self, x):
                if self.mode == "classification":
                    return self.model(x).numpy()  # expect: TCV101
                if self.mode != "torch":
                    return self.model(x).numpy()
                return self.model(x).detach().numpy()

            def fallback(self, x):
                try:
                    param = next(self.model.parameters())
                except Exception:
                    return self.model(x).numpy()  # expect: TCV101
                return self.model(x.to(param.device)).detach().cpu().numpy()
    """,
    "arrays_from_other_libraries": """
        import cv2
        import torch
        from scipy.optimize import linear_sum_assignment

        def match(costs, paths):
            order = torch.tensor([linear_sum_assignment(cost)[1] for cost in costs])  # expect: TCV204
            images = torch.tensor([cv2.imread(path) for path in paths])  # expect: TCV204
            return order, images
    """,
    "a_four_item_step_says_reset_returns_the_observation": """
        import torch

        def evaluate(env, policy):
            size = env.observation_space.shape[0]
            state = torch.Tensor([env.reset()])  # expect: TCV204
            next_state, reward, done, _ = env.step(policy(state))
            return size, next_state

        def evaluate_new(venv, policy):
            size = venv.observation_space.shape[0]
            first = torch.Tensor([venv.reset()])  # (observation, info) on gym 0.26: not a list of arrays
            next_state, reward, terminated, truncated, info = venv.step(policy(first))
            return size, next_state

        def evaluate_asked(env, policy):
            size = env.observation_space.shape[0]
            return size, torch.Tensor([env.reset(return_info=True)])
    """,
    "zeros_filled_from_a_file_or_with_random_floats": """
        import numpy as np
        import torch

        def load_split(path):
            data = np.load(path)
            return data["train_index"], data["y_train"], np.random.rand(4)

        def labels_tensor(path, size):
            train_index, y_train, noise = load_split(path)
            labels = np.zeros(size)
            labels[train_index] = y_train
            noisy = np.zeros(size)
            noisy[train_index] = noise
            ids = torch.LongTensor(labels)
            return ids, torch.LongTensor(noisy)  # expect: TCV201
    """,
    "requires_grad_assigned_and_a_fresh_tensor_from_new": """
        import torch

        x = torch.randn(3, 4)
        x.requires_grad = True
        out = torch.nn.Linear(4, 2)(x)
        target = out.new(*out.size())
        target.data.uniform_(-0.01, 0.01)
        loss = (target - out).mean()
        loss.backward()
        picture = x.numpy()  # expect: TCV101
    """,
    "docstring_entry_of_the_parameter_decides": """
        import torch

        def match(pred_classes: torch.Tensor, iou: torch.Tensor, value: torch.Tensor):
            \"\"\"Match predictions to targets.

            Args:
                pred_classes (torch.Tensor): Predicted class indices.
                iou (torch.Tensor): The pairwise IoU values for ground truth (rows) and predictions
                    (columns).
                value (torch.Tensor): estimated value of the current state
                    following the current policy.
            \"\"\"
            return iou.numpy(), value.numpy()  # expect: TCV101, TCV102
    """,
    "module_class_that_stores_a_given_module_or_a_layer_holds_parameters": """
        import torch
        from torch import nn

        class Wrap(nn.Module):
            def __init__(self, inner, scale=2.0):
                super().__init__()
                self.inner = inner
                self.scale = scale

            def forward(self, x):
                return self.inner(x) * self.scale

        class Scale(nn.Module):
            def __init__(self, scale=2.0):
                super().__init__()
                self.scale = scale
                self.register_parameter("bias", nn.Parameter(torch.zeros(1)))

        class Free(nn.Module):
            def __init__(self, scale=2.0):
                super().__init__()
                self.scale = scale

            def forward(self, x):
                return x * self.scale

        x = torch.ones(3)
        a = Wrap(nn.Linear(3, 3))(x).numpy()  # expect: TCV101
        b = Scale()(x).numpy()  # expect: TCV101
        c = Free()(x).numpy()
        d = Free()(nn.Linear(3, 3)(x)).numpy()  # expect: TCV101
    """,
    # Round 3: a `.numpy()` on the branch where the tensor cannot be on a GPU.
    "flag_that_guards_the_moves_is_off": """
        import torch

        def run(x, model, on_gpu):
            if on_gpu:
                x = x.cuda()
            y = torch.relu(x)
            cpu_side = y.numpy() if not on_gpu else y.cpu().numpy()
            return y.numpy()  # expect: TCV102
    """,
    "moves_guarded_by_another_flag_still_count": """
        import torch

        def run(x, on_gpu, verbose):
            if on_gpu:
                x = x.cuda()
            y = torch.relu(x)
            if not verbose:
                return y.numpy()  # expect: TCV102
    """,
    "cuda_is_not_available_on_this_branch": """
        import torch

        device = torch.device("cuda")
        x = torch.ones(3, device=device)
        if not torch.cuda.is_available():
            print(x.numpy())
        gpu = torch.cuda.is_available()
        print(x.numpy() if not gpu else x.cpu().numpy())
        print(x.numpy())  # expect: TCV102
    """,
    "moved_to_a_device_that_is_the_cpu_here": """
        import torch

        def run(x, device):
            y = torch.relu(x.to(device))
            z = torch.zeros(3, device=device)
            if device == "cpu":
                print(y.numpy(), z.numpy())
            if device.type != "cpu":
                y = y.cpu()
            print(y.numpy())
            print(z.numpy())  # expect: TCV102
    """,
    "caller_supplied_tensor": """
        import torch

        def score(preds: torch.Tensor, fs: int):
            return preds.cpu().numpy()  # expect: TCV101
    """,
    "untyped_parameter_without_evidence_is_the_strict_twins": """
        import torch

        def to_array(x):
            return x.cpu().numpy()
    """,
    # Issue 10, class 1: modules that arrive as parameters or attributes.
    "model_parameter_called_on_data": """
        import torch.nn.functional as F

        def evaluate(model, x):
            return F.softmax(model(x), 1).numpy()  # expect: TCV101
    """,
    "parameter_annotated_as_a_module": """
        from torch import nn

        def evaluate(m: nn.Module, x):
            return m(x).numpy()  # expect: TCV101
    """,
    "a_model_name_that_is_never_called_is_no_model": """
        import torch

        def describe(model):
            return model.numpy()
    """,
    "module_output_on_one_branch": """
        import torch

        def run(t, c):
            m = torch.nn.Linear(3, 3)
            t = torch.ones(3)
            y = m(t) if c else t
            return y.numpy()  # expect: TCV101
    """,
    "module_built_in_a_plain_class_init": """
        import torch
        from torch import nn

        class Agent:
            def __init__(self):
                self.net = nn.Linear(4, 2)

            def act(self, obs):
                q = self.net(torch.as_tensor(obs))
                return q.numpy()  # expect: TCV101
    """,
    # Class 2: values that cross functions in the same file.
    "what_a_method_of_the_file_returns": """
        import numpy as np
        import torch

        class Env:
            def reset(self):
                return np.arange(3)[::-1]

        env = Env()
        obs = env.reset()
        t = torch.from_numpy(obs)  # expect: TCV203
    """,
    "what_same_file_callers_pass": """
        import torch

        def _to_numpy(t):
            return t.cpu().numpy()  # expect: TCV101

        def train(model):
            return _to_numpy(model(torch.ones(3)))
    """,
    "a_container_on_self_filled_in_another_method": """
        import random
        import torch
        from torch import nn

        class Agent:
            def __init__(self):
                self.net = nn.Linear(3, 2)
                self.buffer = []

            def remember(self, obs):
                self.buffer.append(self.net(obs))

            def replay(self):
                for item in random.sample(self.buffer, 2):
                    print(item.numpy())  # expect: TCV101
    """,
    "a_class_annotated_as_a_module_is_no_model": """
        import torch

        def evaluate(envs, Model: torch.nn.Module):
            model = Model(envs)
            actions = model.act(torch.ones(3))
            return actions.cpu().numpy()
    """,
    "an_item_of_a_models_dict_output_named_as_data": """
        import torch

        def predict(model, images):
            outputs = model(images)
            labels = outputs[0]["labels"].cpu().numpy()
            return labels, outputs[0]["scores"].cpu().numpy()  # expect: TCV101
    """,
    # Class 4: false alarms on parameters.
    "a_forward_input_is_data": """
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                print(x.cpu().numpy())
                return x
    """,
    "a_helper_whose_callers_all_run_under_no_grad": """
        import torch

        def _helper(t):
            return t.cpu().numpy()

        def main(model, loader):
            with torch.no_grad():
                for batch in loader:
                    _helper(model(batch))
    """,
    "images_and_labels_are_data": """
        import torch

        def show(images, labels):
            return images.cpu().numpy(), labels.cpu().numpy()
    """,
    "a_parameter_named_as_a_model_output_is_a_fair_risk": """
        import torch

        def report(logits):
            return logits.cpu().numpy()  # expect: TCV101
    """,
    "a_parameter_documented_as_a_model_output": """
        import torch

        def report(values):
            \"\"\"Print the values.

            values: the output of the model, one row per example.
            \"\"\"
            return values.cpu().numpy()  # expect: TCV101
    """,
    "unknown_provenance_is_the_strict_twins": """
        import torch

        class Metric:
            def compute(self):
                preds = torch.cat(self.preds)
                return self.total.cpu().numpy(), preds.numpy()
    """,
    "scale_argument_is_no_evidence": """
        import torch

        def resize(x_np, size, mode):
            x = torch.Tensor(x_np)[None, None, ...]
            y = torch.nn.functional.interpolate(x, size=size, mode=mode)
            return (torch.zeros(3) / size).numpy(), y[0, 0].numpy()
    """,
    "state_dict_values_are_detached": """
        import torch

        def compare(model, loaded):
            for key in model.state_dict():
                a = model.state_dict()[key].cpu().numpy()
                b = loaded.state_dict(keep_vars=False)[key].cpu().numpy()
    """,
    "integer_results_of_any_receiver": """
        import torch

        def accuracy(learn):
            predicted = learn.pred.argmax(dim=1)
            return predicted.cpu().numpy()
    """,
    "distribution_samples": """
        import torch
        from torch.distributions import Categorical, Normal

        def act(logits: torch.Tensor):
            action = Categorical(logits=logits).sample()
            noise = Normal(torch.zeros(2), 1.0).sample()
            return action.cpu().numpy(), noise.numpy(), action.numpy()  # expect: TCV102
    """,
    "helper_return_values": """
        import torch

        def to_host(t):
            return t.detach().cpu()

        def trainable():
            return torch.zeros(3, requires_grad=True)

        def use(x: torch.Tensor):
            return to_host(x).numpy(), trainable().numpy()  # expect: TCV101
    """,
    "helper_return_depends_on_its_arguments": """
        import torch

        def sample(n, device="cuda"):
            return torch.randn(n, device=device)

        def make(n, requires_grad=True):
            return torch.zeros(n, requires_grad=requires_grad)

        def scale(x):
            return x * 2

        model = torch.nn.Linear(2, 2)
        on_host = sample(3, device="cpu").numpy()
        on_gpu = sample(3).numpy()  # expect: TCV102
        frozen = make(3, requires_grad=False).numpy()
        trainable = make(3).numpy()  # expect: TCV101
        output = scale(model(torch.ones(2))).numpy()  # expect: TCV101
        detached = scale(model(torch.ones(2)).detach()).numpy()
    """,
    "no_grad_value_of_unknown_kind_through_shape_methods": """
        import torch

        def translate(model, x):
            with torch.no_grad():
                out, attention = model.decoder(x)
            return out, attention

        def show(attention):
            return attention.squeeze(0).cpu().detach().numpy()

        def show_any(scores):
            return scores.squeeze(0).cpu().detach().numpy()  # expect: TCV103

        _, weights = translate(net, data)
        show(weights)
    """,
    "attribute_stored_in_the_function": """
        import torch

        class Tracker:
            def update(self, out: torch.Tensor):
                self.last = out.detach().cpu()
                first = self.last.numpy()
                self.reset()
                return first, self.last.numpy()

            def keep(self, logits: torch.Tensor):
                self.value = logits
                return self.value.numpy()  # expect: TCV101, TCV102
    """,
    "guards_assert_and_dtype": """
        import torch

        def convert(t: torch.Tensor, u: torch.Tensor):
            assert not t.requires_grad and t.device.type == "cpu"
            a = t.numpy()
            if u.dtype == torch.bool:
                return a, u.cpu().numpy()
            if u.device.type == "cuda":
                return a, u.detach().cpu().numpy()
            return a, u.detach().numpy()
    """,
    "star_import_of_a_torch_package": """
        from fastai.basics import *

        def create(outputs: Tensor):
            if isinstance(outputs, Tensor):
                outputs = outputs.numpy()  # expect: TCV101, TCV102
            return torch.randperm(4).numpy()
    """,
    "star_import_without_torch": """
        from mypackage import *

        def create(fn):
            return fn.cpu().numpy()
    """,
    "moved_with_a_helper_named_cpu": """
        import d2l
        import torch

        model = torch.nn.Linear(2, 2).cuda()
        out = model(torch.ones(1, 2).cuda())
        host = out.detach().to(d2l.cpu()).numpy()
        still = out.detach().to(d2l.gpu()).numpy()  # expect: TCV102
    """,
    "optional_and_union_annotations": """
        from typing import Optional, Union
        import numpy.typing as npt
        import torch

        def f(logits: Optional[torch.Tensor], preds: "torch.Tensor", scores: Union[torch.Tensor, npt.NDArray], outputs: torch.Tensor | None):
            return logits.numpy(), preds.cpu().numpy(), scores.cpu().numpy(), outputs.detach().numpy()  # expect: TCV101, TCV102
    """,
    "foreign_and_own_classes": """
        import onnxruntime as ort
        import tensorflow as tf
        import torch

        class Frame:
            def __init__(self, rows):
                self.data = rows

        def run(x):
            session = ort.InferenceSession("model.onnx")
            out = session.run(None, {"x": x})[0]
            frame = Frame([1, 2])
            return tf.constant([1.0]).numpy(), out.numpy(), frame.data.cpu()
    """,
    "lightning_evaluation_hooks": """
        import pytorch_lightning as pl
        import torch

        class Model(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                return self(batch).cpu().numpy()  # expect: TCV101

            def validation_step(self, batch, batch_idx):
                return self(batch).cpu().numpy()
    """,
    "lightning_module_of_a_project_base": """
        import torch
        from project.training import ProjectLightningModule
        from project.base import Base

        class Model(ProjectLightningModule):
            def __init__(self):
                super().__init__()
                self.net = torch.nn.Linear(3, 2)

            def training_step(self, batch, batch_idx):
                return self.net(batch).cpu().numpy()  # expect: TCV101

            def validation_step(self, batch, batch_idx):
                loss = self.net(batch)
                return loss.cpu().detach().item(), self.net(batch).cpu().numpy()

        class Trainer(Base):
            def __init__(self):
                super().__init__()
                self.net = torch.nn.Linear(3, 2)

            def configure_optimizers(self):
                return torch.optim.Adam(self.net.parameters())

            def on_validation_epoch_start(self):
                self.seen = self.net(torch.ones(1, 3)).cpu().numpy()

            def validation_epoch_end(self, outputs):
                return self.net(outputs).cpu().numpy()

            def fit_step(self, batch):
                return self.net(batch).cpu().numpy()  # expect: TCV101

        class Plain(Base):
            def __init__(self):
                super().__init__()
                self.net = torch.nn.Linear(3, 2)

            def validation_step(self, batch):
                return self.net(batch).cpu().numpy()  # expect: TCV101
    """,
    "modules_frozen_in_a_chain_or_a_loop": """
        import torch

        class Sampler(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(3, 2)

            def forward(self, x):
                return self.lin(x)

        def sample(device):
            sampler = Sampler()
            sampler.eval().requires_grad_(False).to(device)
            return sampler(torch.ones(1, 3, device=device)).cpu().numpy()

        def frozen_by_loop():
            encoder = Sampler()
            for p in encoder.parameters():
                p.requires_grad = False
            return encoder(torch.ones(1, 3)).numpy()

        def chained_at_build():
            head = Sampler().eval().requires_grad_(False)
            return head(torch.ones(1, 3)).numpy()

        def trained():
            model = Sampler().eval()
            return model(torch.ones(1, 3)).numpy()  # expect: TCV101
    """,
    "optimizer_update_runs_without_grad": """
        import torch
        from torch import optim

        class Shared(optim.RMSprop):
            def step(self, closure=None):
                scale = torch.ones(3, requires_grad=True, device="cuda")
                for group in self.param_groups:
                    for p in group["params"]:
                        self.trace = (scale * 2).cpu().detach().numpy()

        class NotAnOptimizer:
            def step(self):
                scale = torch.ones(3, requires_grad=True, device="cuda")
                return (scale * 2).cpu().detach().numpy()  # expect: TCV103
    """,
    "model_called_on_numpy_arrays": """
        import numpy as np
        import torch

        class Backend(torch.nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, im):
                x = im.permute(0, 2, 3, 1).cpu().numpy()
                return self.model(x).numpy(), self.model(im).numpy()  # expect: TCV101

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(3, 2)

            def forward(self, x):
                return self.lin(torch.from_numpy(x))

        def run(frames: np.ndarray):
            return Net()(frames).numpy()  # expect: TCV101
    """,
    "copy_returned_by_a_method_then_detached": """
        import torch

        class Actor(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(3, 2)

            def forward(self, x):
                return self.lin(x)

            def get_action(self, state):
                return torch.tanh(self.forward(state)).cpu()[0]

            def get_detached(self, state):
                return self.forward(state).detach().cpu()

        class Agent:
            def __init__(self):
                self.actor = Actor().cuda()

            def act(self, state):
                return self.actor.get_action(state).detach()  # expect: TCV103

            def act_detached(self, state):
                return self.actor.get_detached(state).detach()

            def act_no_grad(self, state):
                with torch.no_grad():
                    return self.actor.get_action(state).detach()
    """,
    "cuda_of_a_tensor_already_on_the_gpu": """
        import torch

        net = torch.nn.Linear(3, 2).cuda()

        def train(batch):
            x = batch.cuda()
            out = net(x)
            fake = net(out.cuda().detach())
            host = out.cpu().detach()  # expect: TCV103
            return fake, host
    """,
    "data_of_a_reshaped_receiver": """
        import torch

        def build(x, loader):
            points = x.view(-1, 3).data.float().cpu().numpy()  # expect: TCV104
            images = loader.dataset.data.float()
            return points, images
    """,
    "load_compile_and_tensor_types": """
        import torch

        def f(path, x: torch.Tensor):
            loaded = torch.load(path, map_location="cpu")["w"].numpy(), torch.load(path).numpy()
            ids = x.type(torch.LongTensor).numpy()
            on_gpu = x.detach().type(torch.cuda.FloatTensor).numpy()  # expect: TCV102
            model = torch.compile(torch.nn.Linear(2, 2))
            return model(x).cpu().numpy()  # expect: TCV101
    """,
    "legacy_constructor_is_a_fresh_cpu_tensor": """
        import torch

        def f(values):
            t = torch.FloatTensor([1.0, 2.0]) * 2
            return t.numpy()
    """,
    # Round 3 (r3-data): facts that TCV103 and TCV104 needed, which every rule gets.
    "a_data_loaders_batches_do_not_require_grad": """
        import torch

        def show(train_loader, model):
            for step, (images, labels) in enumerate(train_loader):
                pixels = images.to("cuda").cpu().numpy()
                names = labels.data.cpu().numpy()
                scores = model(images).data.cpu().numpy()  # expect: TCV104
    """,
    # Round 5 (r5-data): a loader reached through a name, a batch taken with next(), a hand-written model.
    "a_loader_through_a_name_a_progress_bar_or_next": """
        import torch
        from torch.utils.data import DataLoader
        from tqdm import tqdm

        def evaluate(dl, model):
            iterator = tqdm(DataLoader(dl))
            for image, labels in iterator:
                masks = labels.repeat(3, 1, 1).permute(1, 2, 0).data.cpu().numpy()
                scores = model(image).data.cpu().numpy()  # expect: TCV104
            with tqdm(enumerate(DataLoader(dl))) as bar:
                for _, (x, y) in bar:
                    truth = y.to("cpu").float().cpu().data.numpy()
            images, labels = next(iter(DataLoader(dl)))
            first = images.T.data.cpu().numpy()
    """,
    "a_model_whose_weights_are_plain_tensors_has_no_parameters": """
        import torch
        from torch import nn

        class Linear(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.w = torch.zeros(dim, 1).to("cpu")

            def forward(self, x):
                return torch.mm(self.w.T, x)

            def step(self, grad):
                self.w = self.w - 0.1 * grad

        class Trained(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.w = nn.Parameter(torch.zeros(dim, 1))

            def forward(self, x):
                return torch.mm(self.w.T, x)

        def run(loader):
            for x, y in loader:
                plain = Linear(3).forward(x).data.cpu().numpy()
                learnt = Trained(3).forward(x).data.cpu().numpy()  # expect: TCV104
    """,
    "storage_allocated_in_init_is_data_unless_rebound": """
        import torch

        class Buffer:
            def __init__(self, n, model):
                self.states = torch.zeros(n, 3)
                self.outputs = torch.zeros(n, 3)
                self.model = model

            def refresh(self, x):
                self.outputs = self.model(x)

            def dump(self):
                kept = self.states[:2].cpu().data.numpy()
                seen = self.outputs[:2].cpu().data.numpy()  # expect: TCV104
                return kept, seen
    """,
    "what_a_torchvision_transform_makes_is_data": """
        import torch
        import torchvision.transforms as transforms

        transform = transforms.Compose([transforms.ToTensor()])

        def as_picture(original_image):
            return original_image.permute(1, 2, 0).data.cpu().numpy()

        def show(train_loader, model):
            for images, labels in train_loader:
                scores = model(images).data.cpu().numpy()  # expect: TCV104

        image = transform(load())
        pixels = image.data.cpu().numpy()
        picture = as_picture(image)
    """,
    "a_torchvision_datasets_stored_labels_and_their_items_are_data": """
        import torch
        import torchvision

        test_data = torchvision.datasets.MNIST(root="./mnist/", train=False)
        test_y = test_data.test_labels[:2000]

        def accuracy(model, x):
            pred = model(x).data.numpy()  # expect: TCV104
            return float((pred == test_y.data.numpy()).sum())
    """,
    "a_guard_that_raises_on_requires_grad": """
        import torch

        def to_numpy(value):
            if hasattr(value, "requires_grad") and value.requires_grad:
                raise RuntimeError("requires grad")
            return value.cpu().detach().numpy()
    """,
    "ids_annotated_as_an_integer_tensor_type": """
        import torch

        def decode(ids: torch.LongTensor, scores):
            return ids.cpu().detach().tolist(), scores.cpu().detach()  # expect: TCV103
    """,
    "manual_sgd_steps_update_a_leaf_between_graphs": """
        import torch

        w = torch.randn(3, requires_grad=True)
        x = torch.ones(3)
        for epoch in range(3):
            loss = (w * x).sum()
            loss.backward()
            w.data.sub_(0.1 * w.grad)
        for epoch in range(3):
            later = (w * x).sum()
            later.backward()
        stale = (w ** 2).sum()
        w.data.sub_(0.5)  # expect: TCV104
        stale.backward()
        u = torch.randn(3, requires_grad=True)
        kept_nothing = (u * x).sum()  # the product keeps `x` for u's gradient, not `u`: right gradients
        u.data.sub_(0.5)
        kept_nothing.backward()
    """,
    "a_leaf_made_with_requires_grad_is_updated_through_data": """
        import torch

        w = torch.zeros(3).requires_grad_()
        v = torch.zeros(3, requires_grad=True)
        w.data.add_(1)
        v.data.mul_(2)
        out = (w * v).sigmoid()
        out.data.zero_()  # expect: TCV104
    """,
    # Round 4 (r4-grad): TCV103 needs a grad source, as TCV101 does; these are sources found in the file.
    "a_model_the_file_trains_is_a_grad_source_whatever_its_class": """
        import torch
        from models import Actor, Critic

        class Agent:
            def __init__(self, device):
                self.actor = Actor().to(device)
                self.critic = Critic().to(device)
                self.optimizer = torch.optim.Adam(self.actor.parameters(), lr=1e-3)

            def act(self, state):
                action = self.actor.forward(state)
                return action.squeeze(0).cpu().detach().numpy()  # expect: TCV103

            def value(self, state):
                return self.critic(state).cpu().detach()  # nothing shows the critic is trained here

            def act_quietly(self, state):
                with torch.no_grad():
                    action = self.actor(state)
                return action.cpu().detach()
    """,
    "a_frozen_model_is_no_grad_source": """
        import torch
        from models import Encoder

        encoder = Encoder()
        optimizer = torch.optim.SGD(encoder.parameters(), lr=0.1)
        encoder.freeze()
        features = encoder(torch.ones(2, 3))
        host = features.cuda().detach()
        layer = torch.nn.Linear(3, 2)
        layer.requires_grad_(False)
        out = layer(torch.ones(2, 3)).cuda().detach()
    """,
    "a_value_backpropagated_through_requires_grad": """
        import torch

        def step(criterion, batch, optimizer):
            loss = criterion(batch)
            loss.backward()
            optimizer.step()
            return loss.cuda().detach()  # expect: TCV103

        def explain(cam, image, ids):
            regions = cam.forward(image)
            regions.backward(ids=ids)  # a Grad-CAM's own backward
            return regions.cuda().detach()
    """,
    "a_pretrained_model_is_a_grad_source_its_tokenizer_is_not": """
        import torch
        from transformers import AutoModel, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
        model = AutoModel.from_pretrained("bert-base-uncased").to("cuda")
        inputs = tokenizer(["a text"], return_tensors="pt")
        ids = inputs["input_ids"].cuda().detach()
        outputs = model(**inputs)
        hidden = outputs.last_hidden_state.cpu().detach()  # expect: TCV103
        with torch.no_grad():
            quiet = model(**inputs).last_hidden_state.cpu().detach()
    """,
    "a_static_methods_only_caller_passes_arrays_over_its_tensor_annotation": """
        import numpy as np
        import torch

        class Visualization:
            @staticmethod
            def overlay(pred_mask: torch.Tensor, target_mask: torch.Tensor):
                both = np.logical_and(pred_mask > 0.5, target_mask)
                return np.logical_not(both)

            def draw(self, logits, targets):
                for i in range(logits.shape[0]):
                    preds = logits[i].detach().cpu().numpy()
                    Visualization.overlay(preds, targets[i].cpu().numpy())
    """,
    "a_layers_fan_is_a_number": """
        import numpy as np
        import torch

        def init_lecun_uniform(tensor, scale=1.0):
            fan_in = torch.nn.init._calculate_correct_fan(tensor, "fan_in")
            fan_in_2, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(tensor)
            return scale * np.sqrt(3.0 / fan_in) + np.sqrt(fan_out)
    """,
    "a_model_pickled_in_a_checkpoint_and_a_models_named_submodule": """
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        generator = torch.load("checkpoint.pth")["generator"].to(device)
        weights = torch.load("checkpoint.pth")["state_dict"]
        image = generator(torch.ones(1, 3, device=device))
        shown = image.squeeze(0).cpu().detach()  # expect: TCV103
        autoencoder = torch.nn.Module()
        autoencoder.encoder = torch.nn.Linear(4, 2)
        optimizer = torch.optim.Adam(autoencoder.parameters())
        codes = autoencoder.encoder(torch.ones(1, 4)).to(device).detach()  # expect: TCV103
        kept = weights["layer.weight"].cuda().detach()
    """,
    "a_forward_hook_receives_the_layers_output": """
        import torch

        class Features:
            def __init__(self, layer):
                self.saved = []
                layer.register_forward_hook(self.keep)

            def keep(self, module, inputs, feats):
                self.saved.append(feats.cpu().detach())  # expect: TCV103

            def other(self, module, inputs, feats):
                return feats.cpu().detach()
    """,
    "no_evidence_of_grad_no_finding": """
        import torch

        def to_numpy(t):
            return t.cpu().detach().numpy()

        def log_metrics(labels, preds_ids):
            return labels.cpu().detach(), preds_ids.argmax(1).cpu().detach()

        weights = torch.ones(3, requires_grad=True)
        on_the_cpu = (weights * 2).cpu().detach()  # `.cpu()` of a CPU tensor is the tensor itself
        elsewhere = (weights * 2).cuda().detach()  # expect: TCV103
    """,
    "observations_handed_to_a_method_of_the_files_class_stay_arrays": """
        import gym
        import torch
        import torch.nn as nn

        class ActorCritic(nn.Module):
            def __init__(self):
                super().__init__()
                self.data = []
                self.fc = nn.Linear(4, 2)

            def put_data(self, transition):
                self.data.append(transition)

            def make_batch(self):
                s_lst, r_lst = [], []
                for transition in self.data:
                    s, a, r, s_prime, done = transition
                    s_lst.append(s)
                    r_lst.append([r / 100.0])
                self.data = []
                return torch.tensor(s_lst, dtype=torch.float), torch.tensor(r_lst)  # expect: TCV204

        def main():
            env = gym.make("CartPole-v1")
            model = ActorCritic()
            s = env.reset()
            for step in range(10):
                s_prime, r, done, info = env.step(0)
                model.put_data((s, 0, r, s_prime, done))
                s = s_prime
    """,
    "a_method_called_on_another_object_is_not_the_files": """
        import gym
        import torch

        class Buffer:
            def __init__(self):
                self.items = []

            def put(self, item):
                self.items.append(item)

            def batch(self):
                return torch.tensor([item for item in self.items])

        def fill(queue, env):
            obs, info = env.reset()
            queue.put(obs)  # `queue` may be any object with a `put`

        buffer = Buffer()
        buffer.put([1.0, 2.0])
        fill(buffer, gym.make("CartPole-v1"))
    """,
    "an_agent_hands_observations_to_its_buffer_which_another_method_samples": """
        import random
        from collections import deque

        import gym
        import numpy as np
        import torch

        class ReplayBuffer:
            def __init__(self, capacity):
                self.buffer = deque(maxlen=capacity)

            def add(self, state, action, reward, next_state, done):
                self.buffer.append((state, action, reward, next_state, done))

            def sample(self, size):
                states, actions, rewards, next_states, dones = zip(*random.sample(self.buffer, size))
                return states, actions, next_states

        class Agent:
            def __init__(self):
                self.memory = ReplayBuffer(1000)
                self.optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)

            def remember(self, state, action, reward, next_state, done):
                self.memory.add(state, action, reward, next_state, done)

            def learn(self):
                states, actions, next_states = self.memory.sample(32)
                self.optimizer.step()
                return torch.FloatTensor(states), torch.LongTensor(actions)  # expect: TCV204

        def main():
            agent = Agent()
            state = env.reset()
            steps = np.add(0, 100)  # NumPy's `add`, not the buffer's
            for _ in range(steps):
                next_state, reward, done, _ = env.step(0)
                agent.remember(state, 0, reward, next_state, done)
                state = next_state
            agent.learn()

        env = gym.make("MountainCar-v0")
    """,
    "an_environment_named_by_a_constant_and_handed_to_a_function": """
        import gym
        import torch

        ENV_NAME = "Acrobot-v1"

        def run_episode(env):
            states = []
            state = env.reset()
            done = False
            while not done:
                states.append(state)
                state, reward, done, _ = env.step(0)
            return torch.tensor(states)  # expect: TCV204

        def first_observation(name):
            env = gym.make(name)  # any id a caller names: FrozenLake observes integers
            return torch.tensor([env.reset()])

        def main():
            env = gym.make(ENV_NAME)
            run_episode(env)
            first_observation("FrozenLake-v1")
    """,
    "lists_joined_with_plus": """
        import numpy as np
        import torch

        states, sizes = [], []
        for step in range(3):
            states += [np.zeros(3)]
            sizes = sizes + [step]
        batch = torch.tensor(states)  # expect: TCV204
        counts = torch.tensor(sizes)
        pair = torch.tensor([np.ones(2)] + [np.zeros(2)])  # expect: TCV204
        mixed = torch.tensor([1.0] + [np.zeros(1)] * 0)
    """,
    "records_of_observations_and_numpy_scalars": """
        from dataclasses import dataclass
        from typing import NamedTuple

        import gym
        import gymnasium
        import numpy as np
        import torch

        class Step(NamedTuple):
            obs: np.ndarray
            reward: float

        @dataclass
        class Sample:
            image: np.ndarray
            label: int

        env = gymnasium.wrappers.TimeLimit(gymnasium.make("LunarLander-v3"), 100)
        obs, info = env.unwrapped.reset(seed=0)
        steps, samples = [], []
        for index in range(3):
            obs, reward, terminated, truncated, info = env.step(0)
            steps.append(Step(obs, reward))
            samples.append(Sample(np.zeros((2, 2)), index))
        observations = torch.tensor([step.obs for step in steps])  # expect: TCV204
        rewards = torch.tensor([step.reward for step in steps])
        images = torch.tensor([sample.image for sample in samples])  # expect: TCV204
        labels = torch.tensor([sample.label for sample in samples])
        ratios = torch.tensor([np.sqrt(k) * 2 for k in range(3)])
        lake = gymnasium.make("FrozenLake-v1")
        cell, info = lake.reset()
        cells = torch.tensor([cell])
        one_hot = torch.tensor([np.eye(4)[[cell]]])  # expect: TCV204
        pair = gymnasium.make("CartPole-v1").reset()  # gymnasium: always (observation, info)
        both = torch.tensor([pair])
        old_api = gym.make("Pendulum-v1")
        first, reward, done, info = old_api.step([0.0]) if index else old_api.reset()
        mixed = torch.tensor([first])
    """,
    "an_imported_class_moved_to_a_device_is_a_module_not_a_tensor": """
        import numpy as np
        import torch
        from meta import Meta
        from nets import MyNet

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        maml = Meta(3).to(device)
        accs = []
        for _ in range(3):
            accs.append(maml.finetunning(torch.ones(2)))
        mean = np.array(accs).mean(axis=0)
        model = MyNet(3).to(device)
        out = model(torch.ones(2).to(device))
        with torch.no_grad():
            scores = model(torch.ones(2).to(device)).numpy()  # expect: TCV102
    """,
    "a_gradient_a_private_helper_and_a_metric_are_no_model_outputs": """
        import torch

        class Quantise(torch.autograd.Function):
            @staticmethod
            def backward(ctx, grad_output):
                return torch.from_numpy(grad_output.cpu().numpy())

        def _write(logits):
            return logits.cpu().numpy()

        def roc_auc_compute_fn(y_preds: torch.Tensor, y_targets: torch.Tensor):
            return y_preds.cpu().numpy(), y_targets.cpu().numpy()

        def export(logits: torch.Tensor):
            return logits.cpu().numpy()  # expect: TCV101

        WRITERS = [_write]
    """,
    # Round 6 (r6-data): `self.X` that only methods other than `__init__` store (it declares `None` at most).
    "an_attribute_stored_by_another_method_without_grad": """
        import torch

        class Scorer:
            def __init__(self, net):
                self.net = net
                self.c = None
                self.last = None

            def set_c(self, data):
                with torch.no_grad():
                    self.c = self.net(data).mean(0)

            def step(self, data):
                self.last = self.net(data)
                self.last.sum().backward()

            def score(self, data):
                with torch.no_grad():
                    reps = self.net(data)
                centred = (reps - self.c).data.cpu().numpy()
                return centred, self.last.data.cpu().numpy()  # expect: TCV104
    """,
    # Round 6 (r6-data): `.forward(...)` called by name is a module's forward pass, whatever the receiver's kind.
    "an_explicit_forward_call_gives_a_tensor": """
        import torch

        def push(lnet, state):
            value = lnet.forward(state)[-1].data.numpy()[0, 0]  # expect: TCV104
            with torch.no_grad():
                greedy = lnet.forward(state)[-1].data.numpy()
            return value, greedy
    """,
    # Round 6 (r6-data): a method of the class that hands its parameter to a TensorBoard writer, one hop deep.
    "a_logger_method_that_writes_a_histogram_converts": """
        import torch

        class Logger:
            def __init__(self, writer):
                self._sw = writer

            def _try_log_histogram(self, key, histogram, step):
                if self._sw is not None:
                    self._sw.add_histogram(key, histogram, step)

            def log_histogram(self, key, histogram, step):
                self._try_log_histogram(key, histogram, step)

            def log_text(self, key, value, step):
                print(key, value, step)

            def log_param(self, key, layer, step):
                self.log_histogram(key + "_w", layer.weight.data, step)  # expect: TCV104
                self.log_histogram(key + "_g", layer.weight.grad.data, step)
                self.log_text(key, layer.bias.data, step)
    """,
}


def _expected(source: str) -> dict[int, set[str]]:
    expected = {}
    for number, line in enumerate(source.splitlines(), 1):
        match = re.search(r"# expect: (.*)$", line)
        if match:
            expected[number] = {code.strip() for code in match.group(1).split(",")}
    return expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_provenance_pattern(name):
    source = textwrap.dedent(CASES[name]).lstrip("\n")
    findings = lint_source(Source(text=source), Settings())
    found: dict[int, set[str]] = {}
    for finding in findings:
        found.setdefault(finding.start.line, set()).add(finding.code)
    assert found == _expected(source), "\n".join(f"{f.start.line}: {f.code} {f.message}" for f in findings)
