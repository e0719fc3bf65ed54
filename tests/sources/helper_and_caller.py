import torch


def helper(size):
    return torch.ones(size, requires_grad=True).detach()


def convert(size):
    return helper(size).numpy()


def other(model, batch):
    return model(batch).numpy()
