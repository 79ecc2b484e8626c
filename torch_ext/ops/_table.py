"""What each KERNELS entry is for: name -> (convention, aten target).

Conventions (see torch_ext/ops/__init__.py):
  1  TensorIterator stub kernel: fn(outs, ins, common_dtype, *stub_extra_args)
  2  structured impl: fn(*impl_args, *outs)   (impl signature of <op>_native.h)
  3  plain op: fn(*schema_args) -> result, or mutates out/self and returns it/None
The manifest is written from this table; tests/ops/test_table.py keeps it in
step with KERNELS.
"""

STUBS = {  # convention 1: name -> DispatchStub (extra args after the iterator)
    "add": "add_stub (alpha); sub reaches it with -alpha",
    "mul": "mul_stub", "div_true": "div_true_stub", "div_trunc": "div_trunc_stub",
    "div_floor": "div_floor_stub", "remainder": "remainder_stub", "fmod": "fmod_stub",
    "maximum": "maximum_stub", "minimum": "minimum_stub", "fmax": "fmax_stub",
    "fmin": "fmin_stub", "bitwise_and": "bitwise_and_stub", "bitwise_or": "bitwise_or_stub",
    "bitwise_xor": "bitwise_xor_stub", "lshift": "lshift_stub", "rshift": "rshift_stub",
    "logical_and": "logical_and_stub", "logical_or": "logical_or_stub",
    "logical_xor": "logical_xor_stub", "logaddexp": "logaddexp_stub",
    "copysign": "copysign_stub", "hypot": "hypot_stub", "heaviside": "heaviside_stub",
    "xlogy": "xlogy_stub", "eq": "eq_stub", "ne": "ne_stub", "lt": "lt_stub", "le": "le_stub",
    "gt": "gt_stub", "ge": "ge_stub",
    "abs": "abs_stub", "neg": "neg_stub", "exp": "exp_stub", "exp2": "exp2_stub",
    "expm1": "expm1_stub", "log": "log_stub", "log2": "log2_stub", "log10": "log10_stub",
    "log1p": "log1p_stub", "sqrt": "sqrt_stub", "rsqrt": "rsqrt_stub",
    "reciprocal": "reciprocal_stub", "sin": "sin_stub", "cos": "cos_stub", "tan": "tan_stub",
    "tanh": "tanh_stub", "sinh": "sinh_stub", "cosh": "cosh_stub", "sigmoid": "sigmoid_stub",
    "erf": "erf_stub", "erfc": "erfc_stub", "floor": "floor_stub", "ceil": "ceil_stub",
    "asin": "asin_stub", "acos": "acos_stub", "atan": "atan_stub", "atan2": "atan2_stub",
    "erfinv": "erfinv_stub", "logit": "logit_stub (eps; -1 for None)",
    "logit_backward": "logit_backward_stub (eps; -1 for None); ins (grad, self)",
    "cauchy": "cauchy_stub (median, sigma, generator)",
    "log_normal": "log_normal_stub (mean, std, generator)",
    "geometric": "geometric_stub (p, generator)",
    "trunc": "trunc_stub", "frac": "frac_stub", "round": "round_stub",
    "round_decimals": "round_decimals_stub (decimals)", "sign": "sign_stub (and sgn_stub for real)",
    "signbit": "signbit_stub", "bitwise_not": "bitwise_not_stub",
    "logical_not": "logical_not_stub", "isposinf": "isposinf_stub",
    "isneginf": "isneginf_stub", "isnan": "(iterator form of isnan)",
    "isinf": "(iterator form of isinf)", "isfinite": "(iterator form of isfinite)",
    "nan_to_num": "nan_to_num_stub (nan?, posinf?, neginf?)",
    "threshold": "threshold_stub (threshold, value); relu and threshold_backward reach it",
    "gelu": "GeluKernel (approximate: 0/1 or 'none'/'tanh')",
    "gelu_backward": "GeluBackwardKernel (approximate); ins (grad, self)",
    "silu": "silu_stub", "silu_backward": "silu_backward_stub; ins (grad, self)",
    "sigmoid_backward": "sigmoid_backward_stub; ins (grad, out)",
    "tanh_backward": "tanh_backward_stub; ins (grad, out)",
    "leaky_relu": "leaky_relu_stub (negval)",
    "leaky_relu_backward": "leaky_relu_backward_stub (negval); ins (self, grad)",
    "elu": "elu_stub (alpha, scale, input_scale)",
    "elu_backward": "elu_backward_stub (alpha, scale, input_scale, is_result); ins (grad, x|y)",
    "hardtanh_backward": "hardtanh_backward_stub (min, max); ins (grad, self)",
    "hardsigmoid": "hardsigmoid_stub", "hardsigmoid_backward": "hardsigmoid_backward_stub",
    "hardswish": "hardswish_stub", "hardswish_backward": "hardswish_backward_stub",
    "softplus": "softplus_stub (beta, threshold)",
    "softplus_backward": "softplus_backward_stub (beta, threshold)",
    "mse": "mse_stub", "mse_backward": "mse_backward_stub (norm); ins (self, target, grad)",
    "lerp_scalar": "lerp_kernel_scalar_weight (weight)",
    "lerp_tensor": "lerp_kernel_tensor_weight", "addcmul": "addcmul_stub (value)",
    "addr": "addr_stub (beta, alpha)",
    "addcdiv": "addcdiv_stub (value)", "where": "where_kernel; ins (cond, self, other)",
    "clamp": "clamp_stub (tensor min and max)", "clamp_scalar": "clamp_scalar_stub (min, max)",
    "clamp_min_scalar": "clamp_min_scalar_stub (min)",
    "clamp_max_scalar": "clamp_max_scalar_stub (max)",
    "pow_tensor_tensor": "pow_tensor_tensor_stub",
    "pow_tensor_scalar": "pow_tensor_scalar_stub (exponent)",
    "copy": "copy_stub (non_blocking): device-to-device copy/cast, any strides",
    "fill": "fill_stub (value)",
    "uniform": "uniform_stub (from, to, generator)",
    "random_from_to": "random_from_to_stub (range, base, generator)",
    "random": "random_stub (generator)", "exponential": "exponential_stub (lambd, generator)",
}

STRUCTURED = {  # convention 2: name -> structured op whose impl it is
    "sum": "sum.IntList_out", "mean": "mean.out", "prod": "prod.int_out", "amax": "amax.out",
    "amin": "amin.out", "max_dim": "max.dim_max", "min_dim": "min.dim_min",
    "argmax": "argmax.out", "argmin": "argmin.out", "all": "all.out / all.dims_out",
    "any": "any.out / any.dims_out", "all_all": "all.all_out", "any_all": "any.all_out",
    "norm": "norm.out", "norm_dtype": "norm.dtype_out",
    "linalg_vector_norm": "linalg_vector_norm.out", "cumsum": "cumsum.out",
    "cumprod": "cumprod.out", "index_add": "index_add.out",
    "softmax": "_softmax.out", "log_softmax": "_log_softmax.out",
    "softmax_backward_data": "_softmax_backward_data.out",
    "log_softmax_backward_data": "_log_softmax_backward_data.out",
    "mm": "mm.out", "bmm": "bmm.out", "addmm": "addmm.out (and addmm_)",
    "baddbmm": "baddbmm.out", "gather": "gather.out", "scatter_src": "scatter.src_out",
    "scatter_value": "scatter.value_out", "scatter_reduce": "scatter.reduce_out",
    "scatter_value_reduce": "scatter.value_reduce_out", "scatter_add": "scatter_add.out",
    "scatter_reduce_two": "scatter_reduce.two_out",
    "cat": "cat.out", "tril": "tril.out", "triu": "triu.out", "sort": "sort.values_stable",
    "topk": "topk.values", "nll_loss_forward": "nll_loss_forward.output",
    "nll_loss_backward": "nll_loss_backward.grad_input", "mse_loss": "mse_loss.out",
    "max_pool2d_with_indices": "max_pool2d_with_indices.out",
    "max_pool2d_with_indices_backward": "max_pool2d_with_indices_backward.grad_input",
    "avg_pool2d": "avg_pool2d.out", "avg_pool2d_backward": "avg_pool2d_backward.grad_input",
    "upsample_nearest2d": "upsample_nearest2d.out",
    "upsample_nearest2d_backward": "upsample_nearest2d_backward.grad_input",
}

PLAIN = {  # convention 3: name -> aten op (or torch_ext:: op)
    "convolution_overrideable": "convolution_overrideable (every convolution)",
    "convolution_backward_overrideable": "convolution_backward_overrideable",
    "native_batch_norm": "native_batch_norm", "roll": "roll",
    "native_batch_norm_backward": "native_batch_norm_backward",
    "sum_all": "sum (dtype?)", "prod_all": "prod (dtype?)", "max_all": "max",
    "min_all": "min", "var": "var.correction", "std": "std.correction",
    "var_out": "var.correction_out", "std_out": "std.correction_out",
    "var_mean": "var_mean.correction", "std_mean": "std_mean.correction",
    "logsumexp": "logsumexp", "logsumexp_out": "logsumexp.out",
    "native_layer_norm": "native_layer_norm",
    "native_layer_norm_backward": "native_layer_norm_backward",
    "native_group_norm": "native_group_norm",
    "native_group_norm_backward": "native_group_norm_backward",
    "rms_norm_fwd": "torch_ext::rms_norm_fwd(input, normalized_shape, weight?, eps?)",
    "rms_norm_bwd": "torch_ext::rms_norm_bwd(grad, input, normalized_shape, rstd, weight?, mask)",
    "mv": "mv", "mv_out": "mv.out", "dot": "dot",
    "index_select": "index_select", "index_select_out": "index_select.out",
    "embedding": "embedding", "embedding_dense_backward": "embedding_dense_backward",
    "masked_fill_": "masked_fill_.Scalar / masked_fill_.Tensor",
    "masked_fill": "masked_fill.Scalar / masked_fill.Tensor", "flip": "flip",
    "flip_out": "flip.out", "arange": "arange.start_out", "linspace": "linspace.out",
    "eye": "eye.m_out (n, m, out) / eye.out (n, out)",
    "nonzero": "nonzero", "nonzero_out": "nonzero.out", "masked_select": "masked_select",
    "index": "index.Tensor", "index_put_": "index_put_", "_index_put_impl_": "_index_put_impl_",
    "repeat": "repeat", "randperm": "randperm.generator_out",
    "multinomial": "multinomial", "mse_loss_backward": "mse_loss_backward",
    "mse_loss_backward_out": "mse_loss_backward.grad_input",
    "nll_loss2d_forward": "nll_loss2d_forward", "nll_loss2d_forward_out": "nll_loss2d_forward.output",
    "nll_loss2d_backward": "nll_loss2d_backward",
    "nll_loss2d_backward_out": "nll_loss2d_backward.grad_input",
    "rrelu_with_noise": "rrelu_with_noise", "rrelu_with_noise_": "rrelu_with_noise_",
    "max_unpool2d": "max_unpool2d", "max_unpool2d_out": "max_unpool2d.out",
    "normal": "normal_stub(self, mean, std, generator) -- tensor stub, called like (3)",
    "bernoulli_scalar": "bernoulli_scalar_stub(self, p, generator)",
    "bernoulli_tensor": "bernoulli_tensor_stub(self, p, generator)",
    "native_dropout": "native_dropout", "native_dropout_backward": "native_dropout_backward",
    "_fused_adamw_": "_fused_adamw_ / _fused_adamw_.tensor_lr",
    "relu_fn": "relu", "relu_": "relu_", "hardtanh_fn": "hardtanh",
    "hardtanh_out": "hardtanh.out", "hardtanh_": "hardtanh_", "isnan_fn": "isnan",
    "where_fn": "where.self", "where_out": "where.self_out", "rsub_fn": "rsub.Tensor",
    "fill_": "fill_.Scalar / fill_.Tensor", "zero_": "zero_",
    "skip_layer_norm": "torch_ext::skip_layer_norm(x, residual, normalized_shape, w?, b?, eps)",
    "skip_rms_norm": "torch_ext::skip_rms_norm(x, residual, normalized_shape, w?, eps)",
    "fused_add_rms_norm": "torch_ext::fused_add_rms_norm(x, residual, normalized_shape, w?, eps)",
    "gelu_and_mul": "torch_ext::gelu_and_mul(x, approximate)",
    "gelu_and_mul_backward": "torch_ext::gelu_and_mul_backward(grad, x, approximate)",
    "silu_and_mul": "torch_ext::silu_and_mul(x)",
    "silu_and_mul_backward": "torch_ext::silu_and_mul_backward(grad, x)",
    "rotary_embedding": "torch_ext::rotary_embedding(x, cos, sin, interleaved)",
    "rotary_embedding_backward": "torch_ext::rotary_embedding_backward(grad, cos, sin, interleaved)",
    "flash_attention_fwd": "torch_ext::flash_attention_fwd(q, k, v, mask?, is_causal, scale?) "
                           "-> (out, lse); the SDPA forward",
    "flash_attention_bwd": "torch_ext::flash_attention_bwd(grad, q, k, v, out, lse, mask?, "
                           "is_causal, scale?) -> (dq, dk, dv)",
    "sdpa_overrideable": "_scaled_dot_product_fused_attention_overrideable",
    "sdpa_overrideable_backward": "_scaled_dot_product_fused_attention_overrideable_backward",
}

# Per-family tables: name -> (convention, aten target).
LINALG = {  # ops/linalg.py
    "lu_factor": (1, "lu_factor_stub(LU, pivots, infos, compute_pivots)"),
    "lu_solve": (1, "lu_solve_stub(LU, pivots, B, trans)"),
    "cholesky": (1, "cholesky_stub(A, infos, upper)"),
    "triangular_solve": (1, "triangular_solve_stub(A, B, left, upper, trans, unitriangular)"),
    "cholesky_solve_helper": (3, "_cholesky_solve_helper"),
}

GRID_SAMPLE = {  # ops/grid_sample.py
    "grid_sampler_2d": (3, "grid_sampler_2d"),
    "grid_sampler_2d_backward": (3, "grid_sampler_2d_backward"),
}

EMBEDDING_BAG = {  # ops/embedding_bag.py
    "embedding_bag": (3, "_embedding_bag / _embedding_bag_forward_only"),
    "embedding_bag_dense_backward": (3, "_embedding_bag_dense_backward"),
    "embedding_bag_per_sample_weights_backward": (3, "_embedding_bag_per_sample_weights_backward"),
}

DISTANCE = {  # ops/distance.py
    "cdist_forward": (3, "_cdist_forward"), "cdist_backward": (3, "_cdist_backward"),
    "pdist_forward": (3, "_pdist_forward"), "pdist_backward": (3, "_pdist_backward"),
}

SPATIAL = {  # ops/spatial.py
}

SPECIAL = {  # ops/special.py
}

SELECTION = {  # ops/selection.py
    "triu_indices": (3, "triu_indices"), "tril_indices": (3, "tril_indices"),
    "median_all": (3, "median"), "nanmedian_all": (3, "nanmedian"),
    "median_dim": (3, "median.dim_values"), "nanmedian_dim": (3, "nanmedian.dim_values"),
    "kthvalue": (3, "kthvalue.values"), "mode": (3, "mode"), "mode_values": (3, "mode.values"),
    "repeat_interleave": (3, "repeat_interleave.Tensor"),
    "cummax_helper": (3, "_cummax_helper"), "cummin_helper": (3, "_cummin_helper"),
    "logcumsumexp": (3, "_logcumsumexp"), "logcumsumexp_out": (3, "_logcumsumexp.out"),
    "searchsorted": (3, "searchsorted.Tensor / .Scalar"),
    "searchsorted_out": (3, "searchsorted.Tensor_out / .Scalar_out"),
    "bucketize": (3, "bucketize.Tensor / .Scalar"), "bucketize_out": (3, "bucketize.Tensor_out"),
    "bincount": (3, "bincount"), "histc": (3, "histc"), "histc_out": (3, "histc.out"),
    "unique2": (3, "_unique2"), "unique": (3, "_unique"), "unique_consecutive": (3, "unique_consecutive"),
    "take": (3, "take"), "take_out": (3, "take.out"), "put_": (3, "put_"),
    "index_fill_": (3, "index_fill_.int_Scalar / .int_Tensor"), "masked_scatter_": (3, "masked_scatter_"),
    "count_nonzero": (3, "count_nonzero.dim_IntList"), "trace": (3, "trace"), "equal": (3, "equal"),
    "aminmax_all": (1, "aminmax_allreduce_stub(self, min, max)"),
    "aminmax_dim": (1, "aminmax_stub(self, dim, keepdim, min, max)"),
    "isin": (2, "isin.Tensor_Tensor_out"), "cross": (1, "cross_stub(result, a, b, dim)"),
}

TABLE = {**{k: (1, v) for k, v in STUBS.items()}, **{k: (2, v) for k, v in STRUCTURED.items()},
         **{k: (3, v) for k, v in PLAIN.items()}, **SPATIAL, **SPECIAL, **SELECTION,
         **DISTANCE, **LINALG, **GRID_SAMPLE,
         **EMBEDDING_BAG}
