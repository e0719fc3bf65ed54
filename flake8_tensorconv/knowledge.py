"""What the inference knows about torch and NumPy APIs, as plain tables.

Qualified names are spelled as after import resolution (``torch.nn.Linear``,
``numpy.asarray``). Keeping the facts here keeps the interpreter generic.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from flake8_tensorconv.values import Device, Fact, Grad

# torch factory functions: the result is a fresh tensor (no grad unless asked for).
TORCH_FACTORIES = frozenset(
    "torch." + name
    for name in (
        "tensor as_tensor from_numpy asarray zeros ones empty full rand randn randint randperm "
        "arange range linspace logspace eye empty_strided tril_indices triu_indices "
        "zeros_like ones_like empty_like full_like rand_like randn_like randint_like "
        "frombuffer from_dlpack complex polar"
    ).split()
)

# torch functions whose result is integer or bool: such a tensor cannot require grad.
TORCH_INTEGER_RESULTS = {
    "torch." + name: dtype
    for names, dtype in (
        ("argmax argmin argsort nonzero bucketize searchsorted randperm randint "
         "tril_indices triu_indices multinomial count_nonzero bincount", "int64"),
        ("eq ne lt le gt ge equal isnan isinf isfinite isneginf isposinf isclose "
         "logical_and logical_or logical_not logical_xor isin signbit", "bool"),
    )
    for name in names.split()
}

# Functions that return the gradients of their outputs as a tuple of tensors, and where `create_graph` goes among
# their positional arguments: without it (or with it False) the gradients are computed outside any graph.
GRADIENT_FUNCTIONS = {"torch.autograd.grad": 4}

# torch functions and classes whose result is not a tensor (sizes, dtype info, flags, seeds).
TORCH_NON_TENSOR_RESULTS = frozenset(
    "torch." + name
    for name in (
        "Size iinfo finfo is_tensor is_storage is_floating_point is_complex is_nonzero numel typename can_cast "
        "is_grad_enabled is_inference_mode_enabled get_num_threads manual_seed seed initial_seed Generator"
    ).split()
)
# torch functions that return a new tensor computed from gradients without recording a graph (the total norm
# that gradient clipping returns): no grad, device not known.
TORCH_DETACHED_RESULTS = frozenset(
    "torch.nn.utils." + name for name in "clip_grad_norm_ clip_grad_norm get_total_norm".split()
)
# torch functions whose result is a Python number (a layer's fan, an init gain, a count), or a tuple of them.
TORCH_NUMBER_RESULTS: dict[str, int] = {
    "torch.nn.init._calculate_correct_fan": 1,
    "torch.nn.init.calculate_gain": 1,
    "torch.nn.init._calculate_fan_in_and_fan_out": 2,
    "torch.cuda.device_count": 1,
    "torch.cuda.current_device": 1,
}
# Functions of other libraries that return NumPy arrays: qualname -> the array's dtype (None: it depends on
# the input), or a tuple of them for a function that returns several arrays.
ARRAY_RESULTS: dict[str, str | None | tuple[str | None, ...]] = {
    "scipy.optimize.linear_sum_assignment": ("int64", "int64"),
    **dict.fromkeys(
        "cv2.imread cv2.resize cv2.cvtColor cv2.warpAffine cv2.warpPerspective cv2.flip cv2.GaussianBlur "
        "imageio.imread imageio.v2.imread imageio.v3.imread skimage.io.imread "
        "scipy.ndimage.zoom scipy.ndimage.rotate scipy.ndimage.gaussian_filter scipy.ndimage.shift".split()
    ),
}
# SciPy's sparse matrices in coordinate form (what `.tocoo()` gives): their index and value arrays are NumPy arrays
# (index dtype int32 or int64, by size). CuPy's have the same API on GPU arrays: a file that imports CuPy is left alone.
SPARSE_COO_METHOD = "tocoo"
SPARSE_COO_ARRAYS = ("row", "col", "data")
SPARSE_LOOKALIKE_LIBRARIES = frozenset({"cupy", "cupyx"})
# Tests that are false where CUDA is not available: there, nothing is on a CUDA device.
ACCELERATOR_CHECKS = frozenset({"torch.cuda.is_available"})
# Classes whose instances are not torch tensors (an ``isinstance`` check against them rules a tensor out).
NON_TENSOR_CLASSES = frozenset(
    {
        "numbers.Number", "numbers.Real", "numbers.Integral", "numbers.Complex", "numpy.generic", "numpy.number",
        "numpy.ndarray", "torch.types.Number", "torch.types._Number", "torch.Size",
    }
)
NON_TENSOR_BUILTINS = frozenset({"int", "float", "bool", "complex", "str", "bytes", "list", "tuple", "dict", "set"})

# Tensor methods with integer / bool results.
INTEGER_METHODS = {
    **{name: "int64" for name in "argmax argmin argsort nonzero long bucketize count_nonzero bincount multinomial".split()},
    # A sparse tensor's index tensors (COO, CSR, CSC, BSR): int64 by default, never requiring grad.
    **{name: "int64" for name in "indices _indices crow_indices col_indices ccol_indices row_indices".split()},
    "int": "int32",
    "short": "int16",
    "char": "int8",
    "byte": "uint8",
    **{name: "bool" for name in (
        "bool eq ne lt le gt ge isnan isinf isfinite isneginf isposinf isclose "
        "logical_and logical_or logical_not logical_xor signbit"
    ).split()},
}

# Methods with an integer result on tensors and on arrays alike: evidence enough even when
# the receiver's kind is unknown.
INTEGER_RESULT_METHODS = frozenset("argmax argmin argsort nonzero multinomial".split())
# Comparisons and tests spelled as methods (tensors, pandas objects): a bool result, which never requires
# grad, whatever the receiver is.
BOOL_RESULT_METHODS = frozenset(
    "eq ne lt le gt ge isnan isinf isfinite logical_and logical_or logical_not logical_xor".split()
)
# Buffers that torch's normalisation layers register (BatchNorm, InstanceNorm): running statistics,
# never requiring grad, read as attributes of a layer (`bn.running_var`).
NORM_BUFFER_ATTRIBUTES = frozenset({"running_mean", "running_var", "num_batches_tracked"})
# Datasets whose `data` attribute is stored data (torchvision's MNIST, CIFAR...): no tensor of a graph.
DATASET_MODULES = ("torchvision.datasets.",)
# torch modules whose `reset_parameters()` initialises every parameter the module holds (`for weight in
# self.parameters(): init.uniform_(weight, -stdv, stdv)` in RNNBase and RNNCellBase), a subclass's own too.
RESETS_EVERY_PARAMETER = frozenset(
    f"{module}.{name}" for module in ("torch.nn", "torch.nn.modules.rnn")
    for name in "RNN LSTM GRU RNNCell LSTMCell GRUCell RNNBase RNNCellBase".split()
)
# Constants of NumPy and `math` that are Python floats (`np.pi * t` is a number, `np.sin` of it a NumPy scalar).
FLOAT_CONSTANTS = frozenset(
    {"numpy.pi", "numpy.e", "numpy.euler_gamma", "numpy.inf", "numpy.nan", "math.pi", "math.e", "math.tau", "math.inf", "math.nan"}
)
# torch's data loader: what iterating one gives is collated batches of data, without grad (`for x, y in loader`, also where
# a function of the package returns the loader it built).
DATA_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# Data transforms (torchvision's `Compose`, `ToTensor`, `Normalize`...): what they make of an image is data, without grad.
TRANSFORM_MODULES = ("torchvision.transforms.",)
# Methods of both tensors and arrays that rearrange the receiver and take no other tensor: what
# holds no grad gives none, whatever the receiver is.
SHAPE_METHODS = frozenset("squeeze reshape view transpose flatten ravel swapaxes expand repeat copy".split())

FLOAT_METHODS = {
    "float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
    "cfloat": "complex64", "cdouble": "complex128", "chalf": "complex32",
}


class TensorMethod(NamedTuple):
    """What a tensor method gives: the receiver with these changes (None keeps the receiver's)."""

    grad: Grad | None = None
    device: Device | None = None
    dtype: str | None = None
    facts: frozenset[Fact] = frozenset()  # the result's facts (the receiver's are dropped)
    keeps_view_facts: bool = False  # the receiver's sparse / conj / neg facts still hold


# Tensor layouts and lazy views that .numpy() refuses (TCV107).
TENSOR_VIEW_FACTS = frozenset({Fact.SPARSE, Fact.CONJ, Fact.NEG})

TENSOR_METHODS: dict[str, TensorMethod] = {
    "detach": TensorMethod(grad=Grad.NO, keeps_view_facts=True),
    "detach_": TensorMethod(grad=Grad.NO, keeps_view_facts=True),
    **dict.fromkeys(("to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr"), TensorMethod(facts=frozenset({Fact.SPARSE}))),
    **dict.fromkeys(("conj", "adjoint"), TensorMethod(facts=frozenset({Fact.CONJ}))),
    "cpu": TensorMethod(device=Device.CPU),
    "cuda": TensorMethod(device=Device.ACCELERATOR),
    **{name: TensorMethod(grad=Grad.NO, dtype=dtype) for name, dtype in INTEGER_METHODS.items()},
    **{name: TensorMethod(dtype=dtype) for name, dtype in FLOAT_METHODS.items()},
    # Fresh tensors with the receiver's dtype and device (`new` is the legacy spelling, `out.new(*out.size())`).
    **dict.fromkeys(("new", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"), TensorMethod(grad=Grad.NO)),
}
# Tensor methods whose result has the receiver's shape: a 0-d tensor stays one (`loss.detach().cpu()`).
SHAPE_KEEPING_TENSOR_METHODS = frozenset(("detach", "detach_", "cpu", "cuda", *INTEGER_METHODS, *FLOAT_METHODS))
# Reductions to one value when called with no dimension (`loss.mean()`, `torch.sum(x)`): a 0-d tensor.
WHOLE_REDUCTIONS = frozenset("mean sum prod std var norm nansum nanmean".split())
# torch.nn.functional's losses: with their default reduction ("mean") or "sum" they return a 0-d tensor.
FUNCTIONAL_LOSSES = frozenset(
    "torch.nn.functional." + name
    for name in (
        "cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy "
        "binary_cross_entropy_with_logits kl_div poisson_nll_loss gaussian_nll_loss ctc_loss margin_ranking_loss "
        "hinge_embedding_loss multilabel_margin_loss soft_margin_loss multilabel_soft_margin_loss "
        "cosine_embedding_loss multi_margin_loss triplet_margin_loss"
    ).split()
)
# Keywords of a loss that may keep one value per element (`reduction="none"`, the old `reduce=False`).
LOSS_REDUCTION_KEYWORDS = frozenset({"reduction", "reduce", "size_average"})
# Tensor methods whose result requires grad if the receiver or any operand does.
GRAD_FROM_OPERANDS_METHODS = frozenset(
    "masked_fill where add sub mul div matmul mm bmm cat index_add scatter lerp".split()
)
# Tensor methods that split a tensor into a sequence of tensors like it.
SPLITTING_METHODS = frozenset("chunk split unbind tensor_split".split())
# Tensor methods and attributes whose result may share the receiver's memory (a view, or the tensor
# itself where nothing needs converting: `.cpu()` on the CPU, `.float()` of a float32 tensor).
# What any other tensor method returns is a new tensor (or not a tensor): nothing written to it reaches the receiver.
ALIASING_METHODS = frozenset(
    "cpu cuda to type detach contiguous view view_as reshape reshape_as permute transpose t squeeze unsqueeze "
    "flatten unflatten expand expand_as narrow select unfold diagonal movedim moveaxis swapaxes swapdims as_strided "
    "unbind split chunk tensor_split hsplit vsplit dsplit real imag requires_grad_ pin_memory share_memory_ "
    "float double half bfloat16 cfloat cdouble chalf long int short char byte bool numpy".split()
)
# Methods whose result is the receiver's own values in another shape, dtype or place (one value, not a
# sequence): what holds no grad gives a result that holds none.
GRAD_KEEPING_METHODS = (SHAPE_METHODS | ALIASING_METHODS) - SPLITTING_METHODS - {"hsplit", "vsplit", "dsplit", "requires_grad_", "numpy"}
ALIASING_ATTRIBUTES = frozenset("data T mT H mH real imag".split())
# torch functions whose result may share their first argument's memory.
ALIASING_FUNCTIONS = frozenset(
    "torch." + name
    for name in (
        "as_tensor asarray Tensor detach narrow select transpose swapaxes swapdims movedim moveaxis permute t "
        "squeeze unsqueeze flatten unflatten reshape view_as_real view_as_complex as_strided diagonal "
        "unbind split chunk tensor_split hsplit vsplit dsplit"
    ).split()
)
# Tensor methods whose result is a Python number.
NUMBER_METHODS = frozenset("item dim numel nelement ndimension element_size get_device".split())
# torch functions whose result is a dtype.
TORCH_DTYPE_RESULTS = frozenset({"torch.promote_types", "torch.result_type", "torch.get_default_dtype"})
# torch functions that return a lazy conjugate view.
TORCH_CONJ_VIEWS = frozenset({"torch.conj", "torch.adjoint"})

# Parameters, by the role their name gives them (lower-cased; a suffix counts too: `target_net`, `train_images`).
# A model a caller hands in (it counts only where the function calls it).
MODEL_PARAMETER_NAMES = frozenset(
    "model net network policy actor critic encoder decoder generator discriminator backbone classifier "
    "teacher student qnet q_net value_net policy_net target_net module layer".split()
)
MODEL_PARAMETER_SUFFIXES = ("_model", "_net", "_network", "_encoder", "_decoder", "_policy", "_actor", "_critic")
# Calls that take a model's parameters to train them (torch.optim and common optimizers, gradient clipping).
OPTIMIZER_NAMES = frozenset(
    "SGD Adam AdamW Adamax Adagrad Adadelta RMSprop NAdam RAdam LBFGS Rprop ASGD SparseAdam Lion Adafactor "
    "clip_grad_norm_ clip_grad_value_".split()
)
# `X.from_pretrained(...)` of a class named like a model that is none (its result is no module with parameters).
NOT_A_PRETRAINED_MODEL = r"Tokeni[sz]er|Processor|Config|FeatureExtractor|Scheduler|Pipeline"
# Data: a loader's batch, images, labels, indices, ground truth (scikit-learn's `y_true`). They do not require grad.
DATA_PARAMETER_NAMES = frozenset(
    "batch images image imgs img labels label targets target indices index idx ids input_ids attention_mask "
    "mask masks obs observation observations actions action rewards reward dones y_true".split()
)
DATA_PARAMETER_SUFFIXES = (
    "_batch", "_images", "_imgs", "_labels", "_label", "_targets", "_target", "_ids", "_idx", "_indices", "_mask"
)
# A model's output: a fair risk in a public function (it may require grad and live on a GPU).
OUTPUT_PARAMETER_NAMES = frozenset(
    "logits preds pred predictions prediction outputs output embeddings embedding emb loss losses "
    "y_hat yhat y_pred probs probabilities scores activations hidden_states".split()
)
OUTPUT_PARAMETER_SUFFIXES = ("_logits", "_preds", "_pred", "_output", "_outputs", "_embeddings", "_loss", "_probs")
# A docstring entry that names a property of what follows ("shape of the ...", "number of ..."), not the thing itself.
PROPERTY_OF = re.compile(
    r"\b(?:shape|size|sizes|dimension|dimensions|dim|number|length|count|index|indices|name|names|type|dtype|device|path|key|keys)"
    r"\s+of\s+(?:the\s+|a\s+|an\s+|each\s+)?$",
    re.IGNORECASE,
)
# Ground truth a prediction is scored against (a metric's second argument).
TRUTH_PARAMETER_NAMES = frozenset("target targets label labels y y_true gt ground_truth truth".split())
TRUTH_PARAMETER_SUFFIXES = ("_true", "_target", "_targets", "_label", "_labels", "_gt", "_truth")
# Words of a name that make it a gradient (`grad_output`, `d_logits`): it requires grad only in a double backward.
GRADIENT_WORDS = frozenset({"grad", "grads", "gradient", "gradients", "d"})
# Docstring words that describe a parameter as a model's output.
OUTPUT_DOC_WORDS = re.compile(
    r"logits|outputs? of (?:the|a) (?:model|network|net|policy|critic|actor)"
    r"|(?:model|network|policy|critic|actor|inference)(?:'s)? outputs?"
    r"|predictions|embeddings|value estimat|estimated? (?:by|from) (?:the|a) (?:model|network|policy|critic)|log[- ]?probabilit"
    r"|estimat\w*\b[^.;]{0,60}?\b(?:model|network|policy|critic)\b",
    re.IGNORECASE,
)
# Where a parameter's docstring entry starts: `name:`, `name (Tensor):`, `name : Tensor` (NumPy), `:param name:`, `@param name`.
PARAMETER_ENTRY = re.compile(r"(?::param(?:\s+[\w\[\], .]+?)?\s+|@param\s+)?(?P<name>\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:(?!:)")
# Words after which an entry describes what the value relates to (`IoU values for ground truth and predictions`).
RELATION_WORDS = re.compile(
    r"\b(?:for|between|against|versus|vs\.?|compared (?:to|with)|corresponding to|with respect to|w\.r\.t\.)\s", re.IGNORECASE
)
# Methods that a framework calls (nn.Module.__call__, Lightning, Gym): their callers are never all in sight.
CALLED_BY_FRAMEWORKS = frozenset(
    "forward training_step validation_step test_step predict_step reset step render close".split()
)

# Standard-library functions that pick items of a sequence (a replay buffer's `random.sample`).
PICKS_FROM_SEQUENCE = frozenset({"random.sample", "random.choices", "random.choice"})
PICKS_ONE = frozenset({"random.choice"})

# Tensor methods that return (values, inverse, counts) when asked with return_inverse / return_counts.
UNIQUE_METHODS = frozenset({"unique", "unique_consecutive"})
# Tensor methods returning (values, indices).
VALUES_INDICES_METHODS = frozenset("topk sort kthvalue mode cummax cummin".split())
# ... and these only when a dim is given (``t.max()`` is a plain tensor).
VALUES_INDICES_WITH_DIM = frozenset("max min median nanmedian".split())

# Tensor methods and attributes whose result is not a tensor.
NON_TENSOR_METHODS = frozenset(
    "item tolist size dim ndimension numel nelement stride data_ptr element_size "
    "is_contiguous is_floating_point is_complex storage untyped_storage get_device "
    "type_as_string __len__ backward register_hook is_pinned is_shared is_signed is_inference is_conj is_neg "
    "is_nonzero is_coalesced is_set_to is_same_size equal allclose q_scale q_zero_point q_per_channel_axis "
    "qscheme storage_offset dim_order".split()
)
NON_TENSOR_ATTRIBUTES = frozenset(
    "shape dtype ndim requires_grad is_cuda is_leaf is_sparse layout names itemsize nbytes".split()
)

# Every public name of `torch.Tensor` (methods and attributes, torch 2.x): a method called on a value thought to
# be a tensor that is not among them (`workspace.time_size()` after `workspace.to(device)`) says the value is
# another object, whose methods return what is not known.
TENSOR_API = frozenset(
    (
        "H T abs abs_ absolute absolute_ acos acos_ acosh acosh_ add add_ addbmm addbmm_ addcdiv addcdiv_ addcmul "
        "addcmul_ addmm addmm_ addmv addmv_ addr addr_ adjoint all allclose amax amin aminmax angle any apply_ arccos "
        "arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan arctan2 arctan2_ arctan_ arctanh arctanh_ "
        "argmax argmin argsort argwhere as_strided as_strided_ as_strided_scatter as_subclass asin asin_ asinh asinh_ "
        "atan atan2 atan2_ atan_ atanh atanh_ backward baddbmm baddbmm_ bernoulli bernoulli_ bfloat16 bincount "
        "bitwise_and bitwise_and_ bitwise_left_shift bitwise_left_shift_ bitwise_not bitwise_not_ bitwise_or "
        "bitwise_or_ bitwise_right_shift bitwise_right_shift_ bitwise_xor bitwise_xor_ bmm bool broadcast_to byte "
        "cauchy_ ccol_indices cdouble ceil ceil_ cfloat chalf char cholesky cholesky_inverse cholesky_solve chunk clamp "
        "clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clip clip_ clone coalesce col_indices conj conj_physical "
        "conj_physical_ const_data_ptr contiguous copy_ copysign copysign_ corrcoef cos cos_ cosh cosh_ count_nonzero "
        "cov cpu cross crow_indices cuda cummax cummin cumprod cumprod_ cumsum cumsum_ data data_ptr deg2rad deg2rad_ "
        "dense_dim dequantize det detach detach_ device diag diag_embed diagflat diagonal diagonal_scatter diff digamma "
        "digamma_ dim dim_order dist div div_ divide divide_ dot double dsplit dtype eig element_size eq eq_ equal erf "
        "erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_ exp_ expand expand_as expm1 expm1_ exponential_ fill_ "
        "fill_diagonal_ fix fix_ flatten flip fliplr flipud float float_power float_power_ floor floor_ floor_divide "
        "floor_divide_ fmax fmin fmod fmod_ frac frac_ frexp gather gcd gcd_ ge ge_ geometric_ geqrf ger get_device "
        "grad grad_dtype grad_fn greater greater_ greater_equal greater_equal_ gt gt_ half hardshrink hash_tensor "
        "heaviside heaviside_ histc histogram hsplit hypot hypot_ i0 i0_ igamma igamma_ igammac igammac_ imag index "
        "index_add index_add_ index_copy index_copy_ index_fill index_fill_ index_put index_put_ index_reduce "
        "index_reduce_ index_select indices inner int int_repr inverse ipu is_coalesced is_complex is_conj "
        "is_contiguous is_cpu is_cuda is_distributed is_floating_point is_inference is_ipu is_leaf is_maia is_meta "
        "is_mkldnn is_mps is_mtia is_neg is_nested is_nonzero is_pinned is_quantized is_same_size is_set_to is_shared "
        "is_signed is_sparse is_sparse_csr is_vulkan is_xla is_xpu isclose isfinite isinf isnan isneginf isposinf "
        "isreal istft item itemsize kron kthvalue layout lcm lcm_ ldexp ldexp_ le le_ lerp lerp_ less less_ less_equal "
        "less_equal_ lgamma lgamma_ log log10 log10_ log1p log1p_ log2 log2_ log_ log_normal_ log_softmax logaddexp "
        "logaddexp2 logcumsumexp logdet logical_and logical_and_ logical_not logical_not_ logical_or logical_or_ "
        "logical_xor logical_xor_ logit logit_ logsumexp long lstsq lt lt_ lu lu_solve mH mT map2_ map_ masked_fill "
        "masked_fill_ masked_scatter masked_scatter_ masked_select matmul matrix_exp matrix_power max maximum mean "
        "median min minimum mm mode module_load moveaxis movedim msort mtia mul mul_ multinomial multiply multiply_ mv "
        "mvlgamma mvlgamma_ name nan_to_num nan_to_num_ nanmean nanmedian nanquantile nansum narrow narrow_copy nbytes "
        "ndim ndimension ne ne_ neg neg_ negative negative_ nelement new new_empty new_empty_strided new_full new_ones "
        "new_tensor new_zeros nextafter nextafter_ nonzero nonzero_static norm normal_ not_equal not_equal_ numel numpy "
        "orgqr ormqr outer output_nr permute pin_memory pinverse polygamma polygamma_ positive pow pow_ prelu prod put "
        "put_ q_per_channel_axis q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point qr qscheme "
        "quantile rad2deg rad2deg_ random_ ravel real reciprocal reciprocal_ record_stream register_hook "
        "register_post_accumulate_grad_hook reinforce relu relu_ remainder remainder_ renorm renorm_ repeat "
        "repeat_interleave requires_grad requires_grad_ reshape reshape_as resize resize_ resize_as resize_as_ "
        "resize_as_sparse_ resolve_conj resolve_neg retain_grad retains_grad roll rot90 round round_ row_indices rsqrt "
        "rsqrt_ scatter scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ select select_scatter set_ sgn "
        "sgn_ shape share_memory_ short sigmoid sigmoid_ sign sign_ signbit sin sin_ sinc sinc_ sinh sinh_ size "
        "slice_inverse slice_scatter slogdet smm softmax solve sort sparse_dim sparse_mask sparse_resize_ "
        "sparse_resize_and_clear_ split split_with_sizes sqrt sqrt_ square square_ squeeze squeeze_ sspaddmm std stft "
        "storage storage_offset storage_type stride sub sub_ subtract subtract_ sum sum_to_size svd swapaxes swapaxes_ "
        "swapdims swapdims_ symeig t t_ take take_along_dim tan tan_ tanh tanh_ tensor_split tile to to_dense to_mkldnn "
        "to_padded_tensor to_sparse to_sparse_bsc to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr tolist topk "
        "trace transpose transpose_ triangular_solve tril tril_ triu triu_ true_divide true_divide_ trunc trunc_ type "
        "type_as unbind unflatten unfold uniform_ unique unique_consecutive unsafe_chunk unsafe_split "
        "unsafe_split_with_sizes unsqueeze unsqueeze_ untyped_storage values var vdot view view_as volatile vsplit "
        "where xlogy xlogy_ xpu zero_"
    ).split()
)

# Methods that only exist on torch tensors (not on ndarrays, TensorFlow tensors or
# Python objects): calling one is evidence that the receiver is a torch tensor.
TORCH_ONLY_METHODS = frozenset(
    "cpu cuda detach detach_ requires_grad_ contiguous float double half bfloat16 long int "
    "short char byte bool permute unsqueeze clone to numpy_".split()
)

# Parameter-free nn modules: their output requires grad only if their input does.
PARAMETER_FREE_MODULES = frozenset(
    "torch.nn." + name
    for name in (
        "ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Softmax LogSoftmax "
        "Softplus Softsign Hardtanh Hardswish Hardsigmoid Threshold Identity Flatten Unflatten "
        "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout MaxPool1d MaxPool2d MaxPool3d "
        "AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d "
        "AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d Upsample UpsamplingNearest2d "
        "UpsamplingBilinear2d PixelShuffle PixelUnshuffle ZeroPad2d ConstantPad1d ConstantPad2d "
        "ReflectionPad1d ReflectionPad2d ReplicationPad1d ReplicationPad2d CosineSimilarity "
        "PairwiseDistance MSELoss L1Loss CrossEntropyLoss NLLLoss BCELoss BCEWithLogitsLoss "
        "SmoothL1Loss HuberLoss KLDivLoss CTCLoss MarginRankingLoss CosineEmbeddingLoss "
        "ConstantPad3d ZeroPad1d ZeroPad3d ReflectionPad3d ReplicationPad3d CircularPad1d CircularPad2d CircularPad3d "
        "Softmax2d Softmin Tanhshrink Softshrink Hardshrink LogSigmoid GLU RReLU FeatureAlphaDropout "
        "LPPool1d LPPool2d LPPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d FractionalMaxPool2d FractionalMaxPool3d "
        "ChannelShuffle Fold Unfold PoissonNLLLoss GaussianNLLLoss MultiLabelMarginLoss MultiLabelSoftMarginLoss "
        "MultiMarginLoss SoftMarginLoss HingeEmbeddingLoss TripletMarginLoss"
    ).split()
)

# nn.Module methods that cast the parameters in place (and return the module).
MODULE_DTYPE_METHODS = frozenset({"float", "double", "half", "bfloat16", "to", "type"})
# nn.Module methods that return the module itself (moved, cast, switched to train or eval...).
# Module wrappers that copy their inputs to the wrapped module's devices: they accept CPU inputs.
SCATTERING_MODULES = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel"})
# Module wrappers whose parameters are the wrapped module's (its dtype, its device): `DataParallel(net.double())`
# holds float64 weights.
WRAPPING_MODULES = SCATTERING_MODULES | frozenset(
    {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"}
)
MODULE_RETURNING_ITSELF = MODULE_DTYPE_METHODS | frozenset(
    {"cuda", "cpu", "train", "eval", "requires_grad_", "apply", "share_memory", "zero_grad"}
)

COMPLEX_DTYPES = frozenset({"complex32", "complex64", "complex128"})

# Context managers and decorators that switch grad mode: qualified name -> grad enabled.
GRAD_MODE_SWITCHES = {
    "torch.no_grad": False,
    "torch.autograd.no_grad": False,
    "torch.autograd.grad_mode.no_grad": False,
    "torch.inference_mode": False,
    "torch.autograd.inference_mode": False,
    "torch.autograd.grad_mode.inference_mode": False,
    "torch.enable_grad": True,
    "torch.autograd.enable_grad": True,
    "torch.autograd.grad_mode.enable_grad": True,
}
SET_GRAD_ENABLED = frozenset(
    {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"}
)

# Legacy tensor constructors -> the dtype they cast to (None: the default float dtype). Given data
# they build a fresh CPU tensor; given a tensor they return that very tensor.
LEGACY_CONSTRUCTORS: dict[str, str | None] = {
    "torch.Tensor": None, "torch.FloatTensor": "float32", "torch.DoubleTensor": "float64",
    "torch.HalfTensor": "float16", "torch.BFloat16Tensor": "bfloat16", "torch.LongTensor": "int64",
    "torch.IntTensor": "int32", "torch.ShortTensor": "int16", "torch.CharTensor": "int8",
    "torch.ByteTensor": "uint8", "torch.BoolTensor": "bool",
}

# Top-level packages whose values are never torch tensors (their tensors have `.numpy()` too).
FOREIGN_LIBRARIES = frozenset(
    "tensorflow keras tf_keras jax jaxlib flax optax paddle mxnet PIL pandas polars onnxruntime onnx xarray".split()
)

# Deep-learning frameworks other than torch (top-level packages): a file that imports one may dispatch on the framework.
OTHER_FRAMEWORKS = frozenset("tensorflow keras tf_keras jax flax paddle mxnet".split())
# How code names a framework in a string it tests (`if self.model_type == "tf":`, Hugging Face's `framework == "pt"`).
TORCH_FRAMEWORK_NAMES = frozenset({"torch", "pytorch", "pt"})
OTHER_FRAMEWORK_NAMES = frozenset({"tf", "tensorflow", "tf2", "keras", "tf.keras", "jax", "flax", "paddle", "mxnet"})

# The legacy autograd wrapper: a tensor that requires grad only with requires_grad=True (even of one that does).
VARIABLE_CLASSES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
PARAMETER_CLASSES = frozenset(
    {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.UninitializedParameter"}
)
LIGHTNING_MODULE_BASES = frozenset(
    {
        "pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
        "pytorch_lightning.core.module.LightningModule", "lightning.LightningModule", "lightning.pytorch.LightningModule",
        "lightning.pytorch.core.LightningModule", "lightning.pytorch.core.module.LightningModule",
    }
)
# Custom autograd functions: torch runs their `forward` (and `setup_context`) with grad mode off, and their
# `backward` too unless a double backward is built (`create_graph=True`), so the gradients it receives
# (`grad_output`) do not require grad.
AUTOGRAD_FUNCTION_BASES = frozenset(
    {"torch.autograd.Function", "torch.autograd.function.Function", "torch.autograd.function.InplaceFunction"}
)
AUTOGRAD_FUNCTION_NO_GRAD_METHODS = frozenset({"forward", "setup_context", "backward"})
# LightningModule hooks that Lightning's evaluation and prediction loops run with grad disabled: the whole loop
# runs under `no_grad` (or `inference_mode`), its start, epoch and batch hooks included, and the `*_epoch_end` and
# `*_step_end` hooks of Lightning 1.x ran inside it too.
LIGHTNING_NO_GRAD_HOOKS = frozenset(
    f"{hook.format(stage=stage)}"
    for stage in ("validation", "test", "predict")
    for hook in (
        "{stage}_step", "{stage}_step_end", "{stage}_epoch_end", "on_{stage}_start", "on_{stage}_end",
        "on_{stage}_epoch_start", "on_{stage}_epoch_end", "on_{stage}_batch_start", "on_{stage}_batch_end",
    )
)
# Optimizers: a subclass's methods are the parameter update (`step`) and its state set-up, which torch's own
# optimizers run under `no_grad`; no graph is built there, and the parameters' `.data` is the update itself.
OPTIMIZER_BASES = frozenset(
    {"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"}
    | {f"torch.optim.{name}" for name in OPTIMIZER_NAMES if not name.startswith("clip_")}
)
# A method only Lightning's LightningModule has: a class that defines it follows Lightning's contract, whatever
# base of another module of the project (`ReAgentLightningModule`) it derives from.
LIGHTNING_ONLY_METHODS = frozenset({"configure_optimizers"})
# nn.Module and the subclasses other libraries derive from: instances hold parameters.
MODULE_BASES = frozenset(
    {
        "torch.nn.Module", "torch.nn.modules.module.Module", "transformers.PreTrainedModel",
        "transformers.modeling_utils.PreTrainedModel", *LIGHTNING_MODULE_BASES,
    }
)
TENSOR_CLASSES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"})
NDARRAY_CLASSES = frozenset({"numpy.ndarray"})

# dtype spellings: torch.float32 / numpy.float32 / "float32" / builtins.
_DTYPE_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
    "short": "int16", "cfloat": "complex64", "cdouble": "complex128", "float_": "float64",
    "int_": "int64", "intp": "int64", "bool_": "bool", "complex_": "complex128",
    "object_": "object", "float128": "longdouble", "complex256": "clongdouble",
}
_DTYPE_NAMES = frozenset(
    "float16 float32 float64 bfloat16 int8 int16 int32 int64 uint8 uint16 uint32 uint64 bool "
    "complex32 complex64 complex128 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz float8_e8m0fnu "
    "object str_ bytes_ datetime64 "
    "timedelta64 longdouble clongdouble void".split()
)


def dtype_from_qualname(qualname: str) -> str | None:
    """``torch.float32`` / ``numpy.int64`` -> canonical dtype name, else None."""
    module, _, name = qualname.rpartition(".")
    if module not in ("torch", "numpy"):
        return None
    if module == "torch" and name in ("float", "double", "half", "long", "int", "short", "cfloat", "cdouble"):
        return _DTYPE_ALIASES[name]
    if module == "torch" and name == "chalf":
        return "complex32"
    name = _DTYPE_ALIASES.get(name, name) if module == "numpy" else name
    return name if name in _DTYPE_NAMES else None


# NumPy dtype strings NumPy has no torch counterpart for, by their leading characters:
# "U10", "<U3", "S5", "V4", "M8[ns]", "datetime64[s]", "m8", "timedelta64[D]".
_UNSUPPORTED_STRING = re.compile(
    r"(?P<str_>U\d*|str|unicode)|(?P<bytes_>[Sa]\d*|bytes)|(?P<void>V\d*)"
    r"|(?P<datetime64>M8?(?:\[\w+\])?|datetime64(?:\[\w+\])?)|(?P<timedelta64>m8?(?:\[\w+\])?|timedelta64(?:\[\w+\])?)"
)


def dtype_from_string(text: str) -> str | None:
    text = text.lstrip("=<>|!")
    short = {"f2": "float16", "f4": "float32", "f8": "float64", "i1": "int8", "i2": "int16",
             "i4": "int32", "i8": "int64", "u1": "uint8", "u2": "uint16", "u4": "uint32",
             "u8": "uint64", "b1": "bool", "?": "bool", "c8": "complex64", "c16": "complex128",
             "O": "object", "g": "longdouble", "f16": "longdouble", "G": "clongdouble", "c32": "clongdouble"}
    if text in short:
        return short[text]
    unsupported = _UNSUPPORTED_STRING.fullmatch(text)
    if unsupported is not None:
        return unsupported.lastgroup
    text = _DTYPE_ALIASES.get(text, text)
    return text if text in _DTYPE_NAMES else None


def dtype_from_builtin(name: str) -> str | None:
    return {
        "float": "float64", "int": "int64", "bool": "bool", "complex": "complex128", "object": "object",
        "str": "str_", "bytes": "bytes_",
    }.get(name)


# Dtypes of one byte have no byte order: NumPy keeps ">u1" native.
SINGLE_BYTE_DTYPES = frozenset({"int8", "uint8", "bool"})


class Saved(NamedTuple):
    """What an op's backward reads, of the tensors that an in-place write could change behind its back."""

    result: bool  # its own result (`exp`, `sigmoid`, `softmax`: backward reads what they gave)
    inputs: bool  # its tensor inputs
    # The inputs are kept only for the gradient of another operand (`a * b` keeps `a` for `b`'s gradient):
    # where every other operand is a number or holds no grad, nothing of the input is kept.
    for_other_operand: bool = False


# What autograd keeps for backward, by op (the last part of a torch function's name, a tensor method, or an
# op a module class stands for in SAVED_BY_MODULE): torch's derivatives.yaml, checked against each op's
# `grad_fn._saved_*` tensors with the pinned torch (tests/test_saved_for_backward.py). A write through
# `.data` into a tensor that an op kept changes what its backward reads, and nothing tells: silently
# wrong gradients. A write into a tensor that no op kept changes no gradient computation. An op that is
# not here may keep anything (unknown is no evidence that nothing was kept).
_SAVES_RESULT = "exp exp2 expm1 sigmoid tanh tan softmax log_softmax softmin relu sqrt rsqrt reciprocal"
_SAVES_INPUTS = (
    "log log2 log10 log1p sin cos asin acos atan sinh cosh abs clamp clip gelu silu mish hardswish hardtanh "
    "relu6 leaky_relu elu selu softplus logsigmoid glu logit erf square pow var gather normalize layer_norm "
    "batch_norm group_norm instance_norm mse_loss nll_loss max_pool1d max_pool2d max_pool3d avg_pool1d "
    "avg_pool2d avg_pool3d conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d"
)
_SAVES_INPUTS_FOR_OTHER_OPERAND = (
    "mul multiply div divide true_divide matmul mm bmm einsum linear bilinear baddbmm addmm"
)
_SAVES_NOTHING = (
    "add sub subtract neg negative cat concat concatenate stack hstack vstack sum mean masked_fill where clone "
    "index_select repeat pad cumsum flip roll dropout cross_entropy l1_loss interpolate lerp"
)
SAVED_FOR_BACKWARD: dict[str, Saved] = {
    **dict.fromkeys(_SAVES_RESULT.split(), Saved(result=True, inputs=False)),
    **dict.fromkeys(_SAVES_INPUTS.split(), Saved(result=False, inputs=True)),
    **dict.fromkeys(_SAVES_INPUTS_FOR_OTHER_OPERAND.split(), Saved(result=False, inputs=True, for_other_operand=True)),
    **dict.fromkeys(_SAVES_NOTHING.split(), Saved(result=False, inputs=False)),
    # Reductions to the extreme value and spreads keep both.
    **dict.fromkeys("logsumexp std prod amax amin".split(), Saved(result=True, inputs=True)),
}
# Module classes by the op their forward is (their parameters require grad: a layer keeps its input).
SAVED_BY_MODULE: dict[str, str] = {
    **{f"torch.nn.{name}": "linear" for name in ("Linear", "LazyLinear")},
    "torch.nn.Bilinear": "bilinear",
    **{f"torch.nn.{name}": name.lower() for name in ("Conv1d", "Conv2d", "Conv3d")},
    **{f"torch.nn.ConvTranspose{n}d": f"conv_transpose{n}d" for n in (1, 2, 3)},
    "torch.nn.LayerNorm": "layer_norm",
    **{f"torch.nn.{name}": "batch_norm" for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d")},
    **{f"torch.nn.{name}": "dropout" for name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d")},
    **{f"torch.nn.{name}": name.lower() for name in ("Sigmoid", "Tanh", "Softmax", "Softmin")},
    "torch.nn.LogSoftmax": "log_softmax",
    "torch.nn.ReLU": "relu",
}
