"""A small evaluation script with the conversions flake8-tensorconv is about.

Try: tensorconv check examples/   (then --diff to see the fixes)
"""

import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 3).to(device)


def predict(batch: np.ndarray) -> np.ndarray:
    inputs = torch.from_numpy(batch).float().to(device)
    logits = model(inputs)
    return logits.numpy()  # needs .detach() (grad) and .cpu() (GPU)


def predicted_classes(batch: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        logits = model(torch.from_numpy(batch).float().to(device))
    return logits.argmax(dim=1).cpu().numpy()  # fine: integer result, on the CPU


def loss_value(logits: torch.Tensor, target: torch.Tensor) -> float:
    loss = torch.nn.functional.cross_entropy(logits, target)
    return float(loss.cpu().detach())  # copies first, then detaches


labels = torch.Tensor(np.array([3, 1, 2]))  # int64 labels become float32
