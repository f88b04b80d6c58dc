"""The libraries ``library_files_probe.py`` knows: how each one's build reads its files (include
folders, defines, flags, C++ standard) and the kernel instances its launchers make (template
arguments and block), as data. Facts about public projects' builds, not their code."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from hfuse.toolkit import PYTORCH_EXTENSION_DEFINES

SYM = "quantize::Type::Symmetric"
DEEPSPEED = {
    # (file, kernel, the line its definition starts on): (template arguments, block)
    ("fp_quantizer/fp_quantize.cu", "apply_quantization", 61): (("__half", "4", "7", "8", "8", "3"), (256,)),
    ("fp_quantizer/fp_quantize.cu", "apply_dequantization", 223): (("__half", "3", "8", "3", "4"), (256,)),
    ("fp_quantizer/fp_quantize.cu", "apply_selective_dequantization", 400): (("__half", "3", "8", "3", "4"), (256,)),
    ("lamb/fused_lamb_cuda_kernel.cu", "lamb_cuda_kernel_part1", 194): (("float", "float", "512"), (512,)),
    ("lamb/fused_lamb_cuda_kernel.cu", "lamb_cuda_kernel_part2", 241): (("float", "float", "512"), (512,)),
    ("lamb/fused_lamb_cuda_kernel.cu", "lamb_cuda_kernel_part3", 260): (("float", "float"), (512,)),
    ("quantization/dequantize.cu", "dequantize_kernel", 11): (("__half", "8", SYM, "4", "512"), (512,)),
    ("quantization/quant_reduce.cu", "dequant_reduce", 20): (("8", "16", "4", SYM), (1024,)),
    ("quantization/quantize.cu", "cached_quantization", 17): (("8", SYM, "1", "4", "32", "256"), (256,)),
    ("quantization/swizzled_quantize.cu", "swizzled_quant_kernel", 20): (("8", "4", "512", SYM), (512,)),
    ("random_ltd/gather_scatter.cu", "gather_tokens_impl", 15): (("__half",), (256,)),
    ("random_ltd/gather_scatter.cu", "scatter_tokens_impl", 100): (("__half",), (256,)),
    ("random_ltd/slice_attn_masks.cu", "slice_gpt_mask_impl", 11): (("float",), (256,)),
    ("random_ltd/slice_attn_masks.cu", "slice_bert_mask_impl", 53): (("__half",), (256,)),
    ("random_ltd/token_sort.cu", "scan_sort", 27): (("2",), (1024,)),
    ("transformer/general_kernels.cu", "column_sum_reduce", 10): (("__half",), (32, 32)),
    ("transformer/inference/csrc/apply_rotary_pos_emb.cu", "apply_rotary_pos_half", 26): (("__half", "16", "16"), (256,)),
    ("transformer/inference/csrc/dequantize.cu", "dequantize_kernel", 14): (("__half",), (256,)),
    ("transformer/inference/csrc/dequantize.cu", "dequantize_kernel", 85): (("__half",), (256,)),
    ("transformer/inference/csrc/gelu.cu", "fused_bias_gelu", 29): (("__half",), (512,)),
    ("transformer/inference/csrc/gelu.cu", "fused_bias_add", 86): (("__nv_bfloat16",), (512,)),
    ("transformer/inference/csrc/gelu.cu", "fused_bias_residual", 185): (("__half",), (1024,)),
    ("transformer/inference/csrc/gelu.cu", "gptj_residual_add", 334): (("__half",), (1024,)),
    ("transformer/inference/csrc/gelu.cu", "moe_res_matmul", 428): (("__half",), (1024,)),
    ("transformer/inference/csrc/gelu.cu", "pad_data_kernel", 481): (("__half",), (32, 16)),
    ("transformer/inference/csrc/gelu.cu", "pad_head_seq_kernel", 532): (("__half",), (32, 16)),
    ("transformer/inference/csrc/gelu.cu", "fused_gate_activation", 611): (("__half", "true"), (256,)),
    ("transformer/inference/csrc/layer_norm.cu", "fused_ln", 31): (("__half", "2", "64", "256"), (64, 4)),
    ("transformer/inference/csrc/layer_norm.cu", "fused_residual_ln", 223): (("__half", "2", "64", "256", "true"),
                                                                             (64, 4)),
    ("transformer/inference/csrc/pointwise_ops.cu", "vector_add_kernel", 17): (("__half",), (512,)),
    ("transformer/inference/csrc/relu.cu", "fused_bias_relu", 19): (("__half",), (512,)),
    ("transformer/inference/csrc/rms_norm.cu", "rms_norm", 19): (("__half", "2", "64", "256"), (64, 4)),
    ("transformer/inference/csrc/rms_norm.cu", "pre_rms_norm", 84): (("__nv_bfloat16", "2", "64", "256"), (64, 4)),
    ("transformer/inference/csrc/softmax.cu", "attn_softmax_v2", 34): (("__half", "4"), (256,)),
    ("transformer/inference/csrc/softmax.cu", "attn_softmax_v2", 255): (("4",), (256,)),
    ("transformer/inference/csrc/transform.cu", "bias_add_transform_0213", 87): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "pad_add_transform_0213", 297): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "bias_add_transform_0213", 435): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "bias_add_transform_0213_v2", 492): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "transform4d_0213", 606): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "transform4d_0213_v2", 640): (("__half",), (32, 8)),
    ("transformer/normalize_kernels.cu", "LayerNormBackward1", 627): (("float",), (32, 32)),
    ("transformer/normalize_kernels.cu", "LayerNormBackward1", 695): (("__half",), (32, 32)),
    ("transformer/normalize_kernels.cu", "LayerNormBackward1_fused_add", 1376): (("float",), (32, 32)),
    ("transformer/normalize_kernels.cu", "LayerNormBackward1_fused_add", 1439): (("__half",), (32, 32)),
    ("transformer/softmax_kernels.cu", "attn_softmax", 27): (("32", "4", "128"), (128,)),
    ("transformer/softmax_kernels.cu", "attn_softmax", 157): (("32", "4", "128"), (128,)),
    ("transformer/softmax_kernels.cu", "softmax_backward_kernel", 442): (("__half", "32", "4"), (128,)),
    ("transformer/softmax_kernels.cu", "softmax_backward_kernel_v2", 506): (("__half", "2"), (128,)),
    ("transformer/transform_kernels.cu", "Transpose_Kernel", 11): (("__half",), (32, 32)),
    ("transformer/transform_kernels.cu", "transform_0213", 60): (("__half",), (32, 8)),
    ("transformer/transform_kernels.cu", "bias_add_transform_0213", 165): (("__half",), (32, 8)),
    ("transformer/transform_kernels.cu", "transform4d_0213", 410): (("__half",), (32, 8)),
}
HALF, BF16, AUTO = "c10::Half", "c10::BFloat16", "vllm::Fp8KVCacheDataType::kAuto"
VLLM = {
    ("activation_kernels.cu", "act_and_mul_kernel", 13): ((HALF, f"vllm::silu_kernel<{HALF}>"), (256,)),
    ("activation_kernels.cu", "activation_kernel", 93): (("float", "vllm::gelu_new_kernel<float>"), (256,)),
    ("layernorm_kernels.cu", "rms_norm_kernel", 24): ((BF16,), (256,)),
    ("layernorm_kernels.cu", "fused_add_rms_norm_kernel", 207): ((HALF, "8"), (256,)),
    ("layernorm_kernels.cu", "fused_add_rms_norm_kernel", 260): (("float", "0"), (256,)),
    ("pos_encoding_kernels.cu", "rotary_embedding_kernel", 70): ((HALF, "true"), (128,)),
    ("pos_encoding_kernels.cu", "batched_rotary_embedding_kernel", 94): (("float", "false"), (128,)),
    ("cache_kernels.cu", "copy_blocks_kernel", 68): ((HALF,), (256,)),
    ("cache_kernels.cu", "reshape_and_cache_kernel", 152): ((HALF, HALF, AUTO), (256,)),
    ("cache_kernels.cu", "reshape_and_cache_flash_kernel", 206): ((BF16, BF16, AUTO), (256,)),
    ("cache_kernels.cu", "convert_fp8_kernel", 334): (("uint8_t", HALF, "vllm::Fp8KVCacheDataType::kFp8E4M3"),
                                                      (512,)),
    ("moe_align_block_size_kernels.cu", "moe_align_block_size_kernel", 22): (("int32_t",), (256,)),
    ("quantization/fp8/common.cu", "segmented_max_reduction", 68): ((HALF,), (1024,)),
    ("quantization/fp8/common.cu", "scaled_fp8_quant_kernel", 183): ((HALF,), (1024,)),
    ("quantization/fp8/common.cu", "dynamic_per_token_scaled_fp8_quant_kernel", 197): ((BF16,), (1024,)),
    ("quantization/compressed_tensors/int8_quant_kernels.cu", "static_scaled_int8_quant_kernel", 94):
        ((HALF, "float"), (1024,)),
    ("quantization/compressed_tensors/int8_quant_kernels.cu", "static_scaled_int8_azp_quant_kernel", 108):
        ((HALF, "float", "int32_t"), (1024,)),
    ("quantization/compressed_tensors/int8_quant_kernels.cu", "dynamic_scaled_int8_quant_kernel", 125):
        ((HALF, "float"), (1024,)),
    ("quantization/compressed_tensors/int8_quant_kernels.cu", "dynamic_scaled_int8_azp_quant_kernel", 158):
        (("float", "float", "int32_t"), (1024,)),
}

LLAMA = {
    ("argsort.cu", "k_argsort_f32_i32", 10): (("GGML_SORT_ORDER_ASC",), (256,)),
    ("binbcast.cu", "k_bin_bcast", 25): (("op_add", "float", "float", "float"), (128,)),
    ("binbcast.cu", "k_bin_bcast_unravel", 59): (("op_mul", "float", "half", "float"), (128,)),
    ("binbcast.cu", "k_repeat_back", 94): (("float",), (128,)),
    ("clamp.cu", "op_clamp_kernel", 7): (("float",), (256,)),
    ("concat.cu", "concat_f32_non_cont", 97): (("0",), (256,)),
    ("conv2d-dw.cu", "conv2d_dw_kernel", 81): (("float", "whcn_layout"), (256,)),
    ("convert.cu", "dequantize_block", 8): (("QK4_0", "QR4_0", "dequantize_q4_0", "half"), (256,)),
    ("convert.cu", "dequantize_block_q8_0_f16", 38): (("true",), (32,)),
    ("convert.cu", "dequantize_block_q4_0", 81): (("half",), (32,)),
    ("convert.cu", "dequantize_block_q4_1", 109): (("float",), (32,)),
    ("convert.cu", "dequantize_block_q2_K", 138): (("half",), (64,)),
    ("convert.cu", "dequantize_block_q3_K", 160): (("float",), (64,)),
    ("convert.cu", "dequantize_block_q4_K", 200): (("half",), (32,)),
    ("convert.cu", "dequantize_block_q5_K", 231): (("nv_bfloat16",), (64,)),
    ("convert.cu", "dequantize_block_q6_K", 265): (("half",), (64,)),
    ("convert.cu", "dequantize_block_iq2_xxs", 291): (("half",), (32,)),
    ("convert.cu", "dequantize_block_iq2_xs", 310): (("float",), (32,)),
    ("convert.cu", "dequantize_block_iq2_s", 327): (("half",), (32,)),
    ("convert.cu", "dequantize_block_iq3_xxs", 343): (("float",), (32,)),
    ("convert.cu", "dequantize_block_iq3_s", 366): (("half",), (32,)),
    ("convert.cu", "dequantize_block_iq1_s", 387): (("float",), (32,)),
    ("convert.cu", "dequantize_block_iq1_m", 408): (("half",), (32,)),
    ("convert.cu", "dequantize_block_iq4_nl", 433): (("float",), (32,)),
    ("convert.cu", "dequantize_block_iq4_xs", 451): (("half",), (32,)),
    ("convert.cu", "dequantize_block_mxfp4", 468): (("float",), (32,)),
    ("convert.cu", "convert_unary", 615): (("float", "half"), (256,)),
    ("count-equal.cu", "count_equal", 6): (("int",), (128,)),
    ("cpy.cu", "cpy_flt", 10): (("cpy_1_flt<float, half>",), (64,)),
    ("cpy.cu", "cpy_f32_q", 65): (("cpy_blck_f32_q8_0", "QK8_0"), (1,)),
    ("cpy.cu", "cpy_q_f32", 93): (("cpy_blck_q_f32<dequantize_q4_0, QK4_0>", "QK4_0"), (1,)),
    ("cross-entropy-loss.cu", "cross_entropy_loss_f32", 8): (("true",), (256,)),
    ("cross-entropy-loss.cu", "cross_entropy_loss_back_f32", 52): (("false",), (256,)),
    ("fattn-tile-f16.cu", "flash_attn_tile_ext_f16", 7): (("64", "32", "8", "false"), (32, 8)),
    ("fattn-tile-f32.cu", "flash_attn_tile_ext_f32", 7): (("64", "32", "8", "false"), (32, 8)),
    ("fattn-wmma-f16.cu", "flash_attn_ext_f16", 24): (("64", "16", "4", "get_VKQ_stride(64, 4, 16)", "half", "false"),
                                                      (32, 4)),
    ("getrows.cu", "k_get_rows", 5): (("QK4_0", "QR4_0", "dequantize_q4_0", "float"), (256,)),
    ("getrows.cu", "k_get_rows_float", 42): (("half", "float"), (256,)),
    ("getrows.cu", "k_get_rows_back_float", 69): (("float", "float"), (256,)),
    ("gla.cu", "gated_linear_attn_f32", 4): (("64",), (64,)),
    ("im2col.cu", "im2col_kernel", 5): (("half",), (256,)),
    ("mean.cu", "divide_by_count", 9): (("float",), (1,)),
    ("mmf.cu", "mul_mat_f", 10): (("half2", "32", "8", "4"), (32, 4)),
    ("mmvf.cu", "mul_mat_vec_f", 6): (("half", "float", "1", "128"), (128,)),
    ("mmvq.cu", "mul_mat_vec_q", 139): (("GGML_TYPE_Q4_0", "1"), (32, 4)),
    ("norm.cu", "norm_f32", 4): (("1024",), (1024,)),
    ("norm.cu", "group_norm_f32", 51): (("32",), (32,)),
    ("norm.cu", "rms_norm_f32", 107): (("1024", "true"), (1024,)),
    ("norm.cu", "rms_norm_back_f32", 166): (("32",), (32,)),
    ("norm.cu", "l2_norm_f32", 252): (("1024",), (1024,)),
    ("pool2d.cu", "pool2d_nchw_kernel", 3): (("float", "float"), (256,)),
    ("quantize.cu", "quantize_mmq_q8_1", 50): (("MMQ_Q8_1_DS_LAYOUT_D4",), (128,)),
    ("rope.cu", "rope_norm", 40): (("true", "false", "float"), (1, 256)),
    ("rope.cu", "rope_neox", 82): (("true", "true", "half"), (1, 256)),
    ("rope.cu", "rope_multi", 124): (("false", "false", "float"), (1, 256)),
    ("rope.cu", "rope_vision", 182): (("true", "false", "half"), (1, 256)),
    ("set-rows.cu", "k_set_rows_quant", 7): (("block_q8_0", "QK8_0", "quantize_f32_q8_0_block"), (256,)),
    ("set-rows.cu", "k_set_rows", 85): (("float", "half"), (256,)),
    ("softmax.cu", "soft_max_f32", 46): (("true", "256", "256", "half"), (256,)),
    ("ssm-conv.cu", "ssm_conv_f32", 3): (("128", "4"), (128,)),
    ("ssm-conv.cu", "ssm_conv_long_token_f32", 48): (("128", "4", "32"), (128,)),
    ("ssm-scan.cu", "ssm_scan_f32", 18): (("128", "16", "4"), (128,)),
    ("ssm-scan.cu", "ssm_scan_f32_group", 117): (("16", "128"), (128,)),
    ("unary.cu", "unary_op_kernel", 90): (("op_gelu", "float"), (256,)),
    ("unary.cu", "unary_gated_op_kernel", 208): (("op_silu", "half"), (256,)),
    ("unary.cu", "swiglu_oai_kernel", 305): (("float",), (256,)),
    ("unary.cu", "silu_back_kernel", 385): (("float",), (256,)),
    ("unary.cu", "leaky_relu_kernel", 431): (("half",), (256,)),
    ("wkv.cu", "rwkv_wkv_f32", 4): (("64",), (64,)),
    ("wkv.cu", "rwkv_wkv7_f32", 68): (("64",), (64,)),
}

PACKED = "typename vllm::PackedTypeConverter<c10::Half>::Type"
FP8 = "vllm::Fp8KVCacheDataType::kFp8E4M3"
VLLM_19 = {
    ("layernorm_kernels.cu", "rms_norm_kernel", 13): ((BF16, "8", "2"), (256,)),
    ("layernorm_kernels.cu", "fused_add_rms_norm_kernel", 90): ((HALF, "8"), (256,)),
    ("layernorm_kernels.cu", "fused_add_rms_norm_kernel", 147): (("float", "0"), (256,)),
    ("layernorm_quant_kernels.cu", "rms_norm_static_fp8_quant_kernel", 21): ((HALF, "c10::Float8_e4m3fn", "8"),
                                                                            (256,)),
    ("layernorm_quant_kernels.cu", "fused_add_rms_norm_static_fp8_quant_kernel", 79): ((BF16, "8", "c10::Float8_e4m3fn"),
                                                                                      (256,)),
    ("layernorm_quant_kernels.cu", "fused_add_rms_norm_static_fp8_quant_kernel", 144): (("float", "0",
                                                                                        "c10::Float8_e4m3fn"), (256,)),
    ("activation_kernels.cu", "act_and_mul_kernel", 29): ((HALF, PACKED, f"vllm::silu_kernel<{HALF}>",
                                                           f"vllm::packed_silu_kernel<{PACKED}>", "true", "true"),
                                                          (256,)),
    ("activation_kernels.cu", "activation_kernel", 457): (("float", "vllm::gelu_new_kernel<float>", "false"), (256,)),
    ("pos_encoding_kernels.cu", "rotary_embedding_kernel", 76): ((BF16, "true"), (128,)),
    ("cache_kernels.cu", "copy_blocks_kernel", 79): ((HALF,), (256,)),
    ("cache_kernels.cu", "copy_blocks_mla_kernel", 109): ((BF16,), (256,)),
    ("cache_kernels.cu", "reshape_and_cache_kernel", 143): ((HALF, "uint8_t", FP8), (256,)),
    ("cache_kernels.cu", "reshape_and_cache_flash_kernel", 203): ((BF16, BF16, AUTO), (256,)),
    ("cache_kernels.cu", "concat_and_cache_mla_kernel", 291): ((HALF, HALF, AUTO), (256,)),
    ("cache_kernels.cu", "concat_and_cache_ds_mla_kernel", 335): ((BF16, "uint8_t", FP8), (256,)),
    ("cache_kernels.cu", "convert_fp8_kernel", 763): (("uint8_t", HALF, FP8), (512,)),
    ("sampler.cu", "apply_repetition_penalties_kernel", 15): ((HALF,), (256,)),
    ("activation_kernels.cu", "act_and_mul_kernel_with_param", 252): (
        (HALF, PACKED, f"vllm::fatrelu_kernel<{HALF}>", f"vllm::packed_fatrelu_kernel<{PACKED}>", "true"), (256,)),
    ("activation_kernels.cu", "swigluoai_and_mul_kernel", 312): ((BF16, f"vllm::swigluoai_and_mul<{BF16}>"), (256,)),
    ("cache_kernels.cu", "indexer_k_quant_and_cache_kernel", 438): ((BF16, "uint8_t", FP8), (32, 4)),
    ("cache_kernels.cu", "cp_gather_indexer_k_quant_cache_kernel", 502): (("8",), (32, 8)),
    ("cache_kernels.cu", "gather_and_maybe_dequant_cache", 839): ((BF16, "uint8_t", FP8, "576", "64"), (64,)),
    ("cache_kernels.cu", "cp_gather_cache", 1076): (("uint16_t",), (1024,)),
    ("sampler.cu", "topKPerRowPrefill", 540): (("512", "false"), (512,)),
    ("sampler.cu", "topKPerRowDecode", 563): (("512", "true", "true"), (512,)),
}

CONV1D = {
    ("causal_conv1d_fwd.cu", "causal_conv1d_fwd_kernel", 46):
        (("Causal_conv1d_fwd_kernel_traits<128, 4, false, at::Half, at::Half>",), (128,)),
    ("causal_conv1d_fwd.cu", "causal_conv1d_channellast_fwd_kernel", 205):
        (("Causal_conv1d_channellast_fwd_kernel_traits<128, 4, 64, true, float, float>", "false"), (128,)),
    ("causal_conv1d_bwd.cu", "causal_conv1d_bwd_kernel", 53):
        (("Causal_conv1d_bwd_kernel_traits<128, 4, true, true, at::BFloat16, float>", "false"), (128,)),
    ("causal_conv1d_bwd.cu", "causal_conv1d_channellast_bwd_kernel", 329):
        (("Causal_conv1d_channellast_bwd_kernel_traits<128, 4, 64, true, true, float, float>", "false", "false",
          "false"), (128,)),
    ("causal_conv1d_update.cu", "causal_conv1d_update_kernel", 23):
        (("Causal_conv1d_update_kernel_traits<64, 4, at::Half, float>", "false"), (64,)),
}

MMCV = {
    # the instances their launchers make, over float (the activation with bias: gelu, 4 warps; the
    # 2-D FIR filter's generic kernel, 4 x 32 threads, and its 24 x 24 small-filter tiles, 256;
    # multi-scale deformable attention's backward, reducing 64 channels a block; voxelisation's
    # float points and int coordinates)
    ("pytorch/cuda/bias_act_cuda.cu", "bias_act_kernel", 63): (("float", "2"), (128,)),
    ("pytorch/cuda/fused_bias_leakyrelu_cuda.cu", "fused_bias_act_kernel", 18): (("float",), (256,)),
    ("pytorch/cuda/upfirdn2d_kernel.cu", "upfirdn2d_kernel_large", 92): (("float",), (4, 32)),
    ("pytorch/cuda/upfirdn2d_kernel.cu", "upfirdn2d_kernel_small", 165):
        (("float", "1", "1", "1", "1", "24", "24", "64", "32", "1"), (256,)),
    **{("common/cuda/ms_deform_attn_cuda_kernel.cuh", name, line): (("float", "64"), (64,)) for name, line in (
        ("ms_deformable_col2im_gpu_kernel_shm_blocksize_aware_reduce_v1", 256),
        ("ms_deformable_col2im_gpu_kernel_shm_blocksize_aware_reduce_v2", 347))},
    **{("common/cuda/voxelization_cuda_kernel.cuh", name, line): (("float", "int"), (512,)) for name, line in (
        ("dynamic_voxelize_kernel", 13), ("assign_point_to_voxel", 52), ("assign_voxel_coors", 75))},
    # the explicit specialisations of sync_bn's kernels for PyTorch's half (written without arguments)
    **{("common/cuda/sync_bn_cuda_kernel.cuh", name, line): (("at::Half",), (512,)) for name, line in (
        ("sync_bn_forward_mean_cuda_kernel", 37), ("sync_bn_forward_var_cuda_kernel", 90),
        ("sync_bn_forward_output_cuda_kernel", 173), ("sync_bn_backward_param_cuda_kernel", 267),
        ("sync_bn_backward_data_cuda_kernel", 315))},
    # the templates over something else than one scalar type: furthest point sampling over its block
    ("common/cuda/furthest_point_sample_cuda_kernel.cuh", "furthest_point_sampling_forward_cuda_kernel", 19):
        (("512",), (512,)),
    ("common/cuda/furthest_point_sample_cuda_kernel.cuh", "furthest_point_sampling_with_dist_forward_cuda_kernel",
     87): (("512",), (512,)),
}
QUANTO = {
    # the instances their launchers make (gemv: group 128, one batch row; the GEMMs: the configuration
    # for up to 32 rows and the one for many; the Marlins: 256 threads, 1 x 8 x 8 blocks, 4 stages, the
    # whole column one group)
    ("awq/v2/gemv_cuda.cu", "gemv_kernel", 73): (("2", "1", "256", "128"), (256,)),
    ("awq/v2/gemm_cuda.cu", "gemm_w4a16_T1", 292): (("16", "128", "128", "16", "32", "64", "4", "128", "2"), (32, 4)),
    ("awq/v2/gemm_cuda.cu", "gemm_w4a16_T2", 744): (("64", "128", "64", "64", "32", "64", "4", "128"), (32, 4)),
    ("marlin/marlin_cuda_kernel.cu", "Marlin", 191): (("256", "1", "8", "8", "4", "-1"), (256,)),
    ("marlin/fp8_marlin.cu", "Marlin", 265): (("half", "8", "256", "1", "8", "8", "4", "-1"), (256,)),
    ("marlin/gptq_marlin_repack.cu", "marlin_repack_kernel", 32): (("256", "4", "false"), (256,)),
}
GPTQMODEL = {
    # the instances their launchers make: AWQ's GEMMs for half (32 x 2 threads), VPTQ's for half
    # weights (256 threads), ParoQuant's rotations of 128-wide groups (64 threads), the fast
    # Hadamard transform of 2^10 (128 threads)
    ("awq/quantization/gemm_cuda_gen.cu", "reduce_splitk_fp32_to_output_kernel", 164): (("half",), (256,)),
    ("awq/quantization/gemm_cuda_gen.cu", "gemm_forward_4bit_cuda_m16n128k32", 239): (("half", "half"), (32, 2)),
    ("awq/quantization/gemm_cuda_gen.cu", "gemm_forward_4bit_cuda_m16n64k32", 404): (("half", "float"), (32, 2)),
    ("vptq/vptq_kernel.cu", "vptq_dequantize_kernel", 112): (("c10::Half", "c10::Half"), (256,)),
    ("vptq/vptq_kernel.cu", "vptq_linear_kernel", 158): (("c10::Half", "c10::Half"), (256,)),
    ("vptq/vptq_kernel.cu", "vptq_linear_vec4_kernel", 237): (("c10::Half", "c10::Half"), (256,)),
    ("paroquant/rotation.cu", "rotate_kernel", 33): (("__half", "8", "128", "8", "true", "2"), (64,)),
    ("paroquant/rotation.cu", "rotate_kernel_bf16_half_workspace", 65): (("8", "128", "1", "false", "0"), (64,)),
    ("paroquant/rotation.cu", "rotate_pair_kernel", 243): (("float", "16", "128", "8", "2"), (64,)),
    ("paroquant/rotation.cu", "rotate_pair_grad_kernel", 378): (("__half", "4", "128", "1", "0"), (64,)),
    ("hadamard/fast_hadamard_transform_cuda.cu", "fast_hadamard_transform_kernel", 153):
        (("fast_hadamard_transform_kernel_traits<128, 10, at::Half>",), (128,)),
}
AQLM = {
    # the instances its launchers make: matrix-vector products and dequantisers of 1 x 16-bit codes
    # (groups of 8) and of 2 x 8 / K x 8-bit codes, in half, a block of 32 x THREAD_M (16) threads
    ("cuda_kernel.cu", "Code1x16MatVec", 7): (("false", "8"), (512,)),
    ("cuda_kernel.cu", "Code1x16Dequant", 98): (("8",), (512,)),
    ("cuda_kernel.cu", "Code2x8MatVec", 144): (("false",), (512,)),
    ("cuda_kernel.cu", "Code2x8Dequant", 235): (("true",), (512,)),
    ("cuda_kernel.cu", "CodeKx8MatVec", 296): (("false", "2"), (512,)),
    ("cuda_kernel.cu", "CodeKx8Dequant", 392): (("true", "1"), (512,)),
}
SCATTER = {
    # the instances its launchers make over float: sums (max where an argument kernel goes with it), a
    # block of THREADS (256), the broadcast segment reduction's 32 x 8
    ("cuda/scatter_cuda.cu", "scatter_kernel", 13): (("float", "SUM"), (256,)),
    ("cuda/scatter_cuda.cu", "scatter_arg_kernel", 34): (("float",), (256,)),
    ("cuda/segment_coo_cuda.cu", "segment_coo_kernel", 14): (("float", "MAX", "true"), (256,)),
    ("cuda/segment_coo_cuda.cu", "segment_coo_arg_kernel", 55): (("float",), (256,)),
    ("cuda/segment_coo_cuda.cu", "segment_coo_broadcast_kernel", 76): (("float", "MEAN", "8"), (32, 8)),
    ("cuda/segment_coo_cuda.cu", "segment_coo_arg_broadcast_kernel", 129): (("float",), (256,)),
    ("cuda/segment_coo_cuda.cu", "gather_coo_kernel", 285): (("float",), (256,)),
    ("cuda/segment_coo_cuda.cu", "gather_coo_broadcast_kernel", 305): (("float",), (256,)),
    ("cuda/segment_csr_cuda.cu", "segment_csr_kernel", 15): (("float", "SUM", "1"), (256,)),
    ("cuda/segment_csr_cuda.cu", "segment_csr_broadcast_kernel", 62): (("float", "MIN"), (256,)),
    ("cuda/segment_csr_cuda.cu", "gather_csr_kernel", 170): (("float", "4"), (256,)),
    ("cuda/segment_csr_cuda.cu", "gather_csr_broadcast_kernel", 194): (("float",), (256,)),
}
LN = "layer_norm::Kernel_traits<{w}, {i}, {r}, {o}, float, uint32_t, {h}, 1, 4, 1, 16>"
LN_FINAL = "layer_norm::Kernel_traits_finalize<{h}, {w}, {i}, {r}, {o}, float, uint32_t, {c}, 1024, 4>"
FP16, BFLOAT16 = dict(w="half", i="half", r="float", o="half"), dict(w="nv_bfloat16", i="nv_bfloat16",
                                                                   r="nv_bfloat16", o="nv_bfloat16")
FLASH_LN = {
    # file: ((kernel, template arguments, block), ...): the instances its REGISTER_*_LAUNCHER lines make
    # (Kernel_traits of 4 x 1 warps, 16-byte loads; the finalize kernels' 32 x 32 threads), with
    # dropout and colscale on, even columns
    "ln_fwd_1024.cu": (("layer_norm::ln_fwd_kernel", (LN.format(h=1024, **FP16), "true", "true", "false", "true"),
                        (128,)),),
    "ln_bwd_2048.cu": (("layer_norm::ln_bwd_kernel", (LN.format(h=2048, **BFLOAT16), "true", "true", "false", "true"),
                        (128,)),
                       ("layer_norm::ln_bwd_finalize_kernel", (LN_FINAL.format(h=2048, c="true", **BFLOAT16), "true",
                                                               "true"), (1024,))),
    "ln_parallel_fwd_1024.cu": (("layer_norm::ln_parallel_residual_fwd_kernel",
                                 (LN.format(h=1024, **FP16), "true", "false", "true"), (128,)),),
    "ln_parallel_bwd_4096.cu": (("layer_norm::ln_parallel_residual_bwd_kernel",
                                 (LN.format(h=4096, **BFLOAT16), "false", "false", "true"), (128,)),
                                ("layer_norm::ln_parallel_residual_bwd_finalize_kernel",
                                 (LN_FINAL.format(h=4096, c="false", **BFLOAT16), "true"), (1024,))),
}

# flash-attn 2.4.2's csrc extensions beside the attention (their setup.py files: -O3, the half and
# bfloat16 operators on, relaxed constexpr, extended lambdas, fast math): the cross-entropy kernels
# (template-template epilogues), Megatron's fused masked softmax (warp softmax templates in headers,
# one instance per power of two), FasterTransformer's masked multi-head attention (decode, in a .hpp)
SOFTMAX = ("c10::Half", "c10::Half", "float", "10")
FLASH_EXTRAS = {
    "fused_softmax/scaled_masked_softmax_cuda.cu": (
        ("scaled_masked_softmax_warp_forward", SOFTMAX, (32, 4)),
        ("scaled_masked_softmax_warp_backward", SOFTMAX, (32, 4))),
    "fused_softmax/scaled_upper_triang_masked_softmax_cuda.cu": (
        ("scaled_upper_triang_masked_softmax_warp_forward", SOFTMAX, (32, 4)),
        ("scaled_upper_triang_masked_softmax_warp_backward", SOFTMAX, (32, 4))),
    # mmha_launch_kernel<uint16_t, 128, 128> for a context of 32..2047: 2 threads a key, 16 a value, 128 a block
    "ft_attention/decoder_masked_multihead_attention.cu": (
        ("mmha::masked_multihead_attention_kernel", ("uint16_t", "128", "128", "2", "16", "128", "false"), (128,)),),
}
XENTROPY = {
    # host_softmax_xentropy for half logits: ILP of a float4, float accumulation, SoftMax_getBlockSize's 512
    ("xentropy/xentropy_kernel.cu", "cunn_SoftMaxXEntropyForward", 429):
        (("8", "c10::Half", "float", "float", "LogSoftMaxForwardEpilogue"), (512,)),
    ("xentropy/xentropy_kernel.cu", "cunn_SoftMaxXEntropyBackward", 595):
        (("8", "c10::Half", "float", "float", "LogSoftMaxBackwardEpilogue"), (512,)),
}

# ColossalAI's fused optimisers: each file runs its functor through multi_tensor_apply.cuh's
# variadic kernel (the launcher's arguments, decayed, are its pack), at BLOCK_SIZE 512 for fp32
_MTA, _F = "multi_tensor_apply_kernel", "float"
COLOSSAL_OPTIMISERS = {
    "kernel/cuda/multi_tensor_adam_kernel.cu": (
        (_MTA, ("TensorListMetadata<4>", "AdamFunctor<float, float>", *(_F,) * 6, "adamMode_t", _F, _F), (512,)),),
    "kernel/cuda/multi_tensor_scale_kernel.cu": (
        (_MTA, ("TensorListMetadata<2>", "ScaleFunctor<float, float>", _F), (512,)),),
    "kernel/cuda/multi_tensor_sgd_kernel.cu": (
        (_MTA, ("TensorListMetadata<3>", "SGDFunctor<float, float>", *(_F,) * 4, "bool", "bool", "bool", _F), (512,)),),
    "kernel/cuda/multi_tensor_lamb_kernel.cu": (
        (_MTA, ("TensorListMetadata<4>", "LAMBStage1Functor<float>", *(_F,) * 6, "adamMode_t", _F, "float*", _F),
         (512,)),),
    "kernel/cuda/multi_tensor_l2norm_kernel.cu": (
        (_MTA, ("TensorListMetadata<1>", "L2NormFunctor<float>", "float*", "float*", "bool", "int"), (512,)),),
}

COLOSSAL_FILE = "kernel/cuda/{}_kernel.cu"
COLOSSAL_SOFTMAX = ("at::Half", "at::Half", "float", "10")
COLOSSAL = {
    # (file, kernel, line): the instances their launchers make for half (vectors of 16 bytes, the
    # 512-thread cap of the KV-cache and rotary launchers), fp32 layer norm at its 32 x 4 blocks,
    # MoE's smallest dispatch, decode attention of head size 128 in blocks of 16 tokens
    (COLOSSAL_FILE.format("activation"), "act_and_mul_kernel", 17): (("at::Half", "silu_kernel<at::Half>"), (256,)),
    (COLOSSAL_FILE.format("context_kv_cache_memcpy"), "context_kv_cache_memcpy_kernel", 12):
        (("half", "half", "true", "8"), (512,)),
    (COLOSSAL_FILE.format("decode_kv_cache_memcpy"), "decode_kv_cache_memcpy_kernel", 13):
        (("half", "half", "true", "8"), (512,)),
    (COLOSSAL_FILE.format("convert_fp8"), "convert_fp8_kernel", 16): (("half", "uint8_t", "4"), (256,)),
    (COLOSSAL_FILE.format("flash_decoding_attention"), "flash_decoding_attention_kernel_v1", 238):
        (("half", "half", "128", "16", "128"), (128,)),
    (COLOSSAL_FILE.format("flash_decoding_attention"), "flash_decoding_attention_kernel_v2", 429):
        (("half", "half", "128", "16", "128"), (128,)),
    (COLOSSAL_FILE.format("flash_decoding_attention"), "flash_decoding_reduce_kernel", 557):
        (("half", "128", "128"), (128,)),
    (COLOSSAL_FILE.format("fused_rotary_emb_and_cache"), "rotary_embedding_and_cache_copy_kernel", 161):
        (("half", "float", "half", "8"), (512,)),
    (COLOSSAL_FILE.format("fused_rotary_emb_and_cache"), "rotary_embedding_kernel", 206):
        (("half", "float", "8"), (512,)),
    (COLOSSAL_FILE.format("get_cos_and_sin"), "apply_get_context_cos_and_sin_kernel", 38):
        (("half", "true", "8"), (512,)),
    (COLOSSAL_FILE.format("get_cos_and_sin"), "apply_get_decode_cos_and_sin_kernel", 74):
        (("half", "true", "8"), (512,)),
    (COLOSSAL_FILE.format("layer_norm"), "cuApplyLayerNorm", 254): ((_F, _F, _F), (32, 4)),
    (COLOSSAL_FILE.format("layer_norm"), "cuComputePartGradGammaBeta", 352): ((_F, _F, _F), (32, 4)),
    (COLOSSAL_FILE.format("layer_norm"), "cuComputeGradGammaBeta", 423): ((_F, _F), (32, 8)),
    (COLOSSAL_FILE.format("layer_norm"), "cuComputeGradInput", 473): ((_F, _F, _F), (32, 4)),
    (COLOSSAL_FILE.format("moe"), "moe_dpch_fwd_kernel", 275): ((_F, "32", "4"), (32,)),
    (COLOSSAL_FILE.format("moe"), "moe_dpch_bwd_kernel", 286): ((_F, "32", "4"), (32,)),
    (COLOSSAL_FILE.format("moe"), "moe_cb_fwd_kernel", 335): ((_F, "32", "4"), (32,)),
    (COLOSSAL_FILE.format("moe"), "moe_cb_bwd_kernel", 349): ((_F, "32", "4"), (32,)),
    (COLOSSAL_FILE.format("rms_layernorm"), "rms_layernorm_kernel", 50): (("at::Half", "8"), (512,)),
    (COLOSSAL_FILE.format("rms_layernorm"), "general_rms_layernorm_kernel", 102): ((_F, "4"), (1024,)),
    (COLOSSAL_FILE.format("rms_layernorm"), "fused_add_rms_layernorm_kernel", 136): (("at::Half", "8"), (512,)),
    (COLOSSAL_FILE.format("rms_layernorm"), "general_fused_add_rms_layernorm_kernel", 183): ((_F, "4"), (1024,)),
    (COLOSSAL_FILE.format("scaled_masked_softmax"), "scaled_masked_softmax_warp_forward", 33):
        (COLOSSAL_SOFTMAX, (32, 4)),
    (COLOSSAL_FILE.format("scaled_masked_softmax"), "scaled_masked_softmax_warp_backward", 156):
        (COLOSSAL_SOFTMAX, (32, 4)),
    (COLOSSAL_FILE.format("scaled_upper_triang_masked_softmax"), "scaled_upper_triang_masked_softmax_warp_forward", 33):
        (COLOSSAL_SOFTMAX, (32, 4)),
    (COLOSSAL_FILE.format("scaled_upper_triang_masked_softmax"), "scaled_upper_triang_masked_softmax_warp_backward",
     155): (COLOSSAL_SOFTMAX, (32, 4)),
}


@dataclass(frozen=True)
class Library:
    """How a library's build reads its files, and the kernels it instantiates."""

    includes: tuple[str, ...]
    """Its include folders, relative to the root."""
    template_arguments: dict
    """(file, kernel, the line its definition starts on): (template arguments, block)."""
    files: tuple[str, ...] = ()
    """The files probed (all but ``skipped`` where empty)."""
    skipped: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    undefines: tuple[str, ...] = ()
    flags: tuple[str, ...] = ("--use_fast_math", "--expt-relaxed-constexpr")
    """PyTorch's extension builder adds --expt-relaxed-constexpr (``COMMON_NVCC_FLAGS``)."""
    std: str = "c++20"
    header_kernels: dict = field(default_factory=dict)
    """file: ((kernel, template arguments, block), ...) defined in the headers it includes (the
    file instantiates them)."""
    launched: bool = False
    """Kernel templates the table does not name take the arguments and block of the first launch
    in their file written in literals (``k<4, half><<<grid, 256>>>``; where the block is no literal,
    the kernel's ``__launch_bounds__``, or 256)."""
    inactive: tuple = ()
    """(file, line) of kernels an ``#if`` on the architecture leaves out for sm_90 (stubs for older GPUs)."""
    every_kernel: dict = field(default_factory=dict)
    """file: (template arguments, block) of each of its kernels the table does not name (a
    template's arguments; the others take none)."""
    system_includes: tuple[str, ...] = ()
    """Its ``-isystem`` folders, relative to the root (an absolute path is taken as it is)."""
    included_kernels: tuple = ()
    """(header folder, template arguments, block): every kernel of the headers in that folder a
    file includes is a case of the first file including it (mmcv's ``*_cuda_kernel.cuh``); a
    template of as many parameters as arguments takes them, others need the table (by header)."""
    pre_includes: tuple[str, ...] = ()
    """Files given with ``-include`` (relative to the root): what the library's instantiating ``.cu``
    files include before a header of kernels that the probe reads alone (Transformer Engine's traits)."""


_NORM, _ROPE, _QUANT, _SAMPLING = "flashinfer::norm::", "flashinfer::", "flashinfer::quantization::", \
    "flashinfer::sampling::"
_SCAN, _REDUCE = "cub::BLOCK_SCAN_WARP_SCANS", "cub::BLOCK_REDUCE_WARP_REDUCTIONS"
_ROPE_ARGS = ("false", "128", "8", "16", "half", "int32_t")  # (head_dim 128, vec 8: bdx 16, bdy 8)
FLASHINFER_074 = {
    # (the block of each launcher for head_dim 128 or d 4096 in half: 32 x 4 warps for the norms,
    # bdx x bdy for rope and the KV cache, 1024 for sampling on sm_90, the literal 256 elsewhere)
    "csrc/norm.cu": (
        (_NORM + "RMSNormKernel", ("8", "half"), (32, 4)),
        (_NORM + "RMSNormQuantKernel", ("8", "half", "__nv_fp8_e4m3"), (32, 4)),
        (_NORM + "QKRMSNormKernel", ("8", "nv_bfloat16"), (32, 4)),
        (_NORM + "FusedAddRMSNormKernel", ("8", "nv_bfloat16"), (32, 4)),
        (_NORM + "FusedAddRMSNormQuantKernel", ("8", "half", "__nv_fp8_e4m3"), (32, 4)),
        (_NORM + "FusedAddRMSNormFP8BlockQuantKernel", ("8", "nv_bfloat16", "__nv_fp8_e4m3"), (32, 4)),
        (_NORM + "generalLayerNorm", ("half", "half", "int8_t", "false"), (128,))),
    "csrc/rope.cu": (
        (_ROPE + "BatchQKApplyRotaryPosIdsCosSinCacheKernel", _ROPE_ARGS, (16, 8)),
        (_ROPE + "BatchQKApplyRotaryPosIdsCosSinCacheHeadParallelismKernel", _ROPE_ARGS, (16, 8)),
        (_ROPE + "BatchQKApplyRotaryPosIdsKernel", _ROPE_ARGS, (16, 8)),
        (_ROPE + "BatchQKApplyRotaryKernel", _ROPE_ARGS, (16, 8)),
        (_ROPE + "RopeQuantizeKernel", ("false", "8", "16", "half", "int32_t", "__nv_fp8_e4m3"), (16, 8))),
    "csrc/quantization.cu": (
        (_QUANT + "PackBitsKernel", (_QUANT + "BitOrder::kLittle",), (256,)),
        (_QUANT + "SegmentPackBitsKernel", (_QUANT + "BitOrder::kBig", "int32_t"), (256,)),
        (_QUANT + "PerTokenGroupQuant8BitRegisterKernel", ("half", "__nv_fp8_e4m3", "false", "false", "true"),
         (256,))),
    "csrc/sampling.cu": (
        (_SAMPLING + "SamplingFromProbKernel", ("1024", _SCAN, _REDUCE, "4", "true", "float", "int32_t"), (1024,)),
        (_SAMPLING + "TopKSamplingFromProbKernel", ("1024", _SCAN, _REDUCE, "4", "true", "float", "int32_t"),
         (1024,)),
        (_SAMPLING + "TopPRenormProbKernel", ("1024", _REDUCE, "4", "float"), (1024,)),
        (_SAMPLING + "OnlineSoftmaxFusedKernel", ("1024", "4", "float", "true"), (1024,))),
    "csrc/page.cu": (
        (_ROPE + "AppendPagedKVCacheKernel", ("128", "8", "half", "int32_t"), (16, 4)),
        (_ROPE + "AppendPagedKVCacheDecodeKernel", ("128", "8", "half", "int32_t"), (16, 4))),
}
_SP24 = "xformers/csrc/sparse24/"
_HALF_TRAITS = "xformers::sp24::KernelTypes<cutlass::half_t>"
XFORMERS = {
    (_SP24 + "sparse24_apply.cu", "sparse24_apply_kernel", 17): ((_HALF_TRAITS,), (4, 8)),
    (_SP24 + "sparse24_apply_dense_output.cu", "sparse24_apply_dense_output_k", 52): (("cutlass::half_t",), (4, 8)),
    (_SP24 + "sparse24_largest_mask_2d.cu", "sparse24_largest_mask_2d_cu", 180):
        (("Sp24MaskKernel<cutlass::half_t, false>",), (64,)),
    (_SP24 + "sparse24_pack.cu", "sparse24_sparsify_both_ways_kernel", 16):
        ((_HALF_TRAITS, "xformers::sp24::MetadataCutlassSm80",
          "xformers::sp24::LargestValuesGreedy<xformers::sp24::IdentityOp>"), (4, 8)),
}
"""(sparseNM_dense's fourth argument is a lambda's type, which no name gives: not probed.)"""

_LS = "lightseq/csrc/kernels/"
LIGHTSEQ = {
    # (instances its launchers make with the template arguments deduced: float, at their blocks)
    (_LS + "cross_entropy.cu", "ls_cross_entropy_fw_kernel", 8): (("float",), (1024,)),
    (_LS + "cross_entropy.cu", "ls_cross_entropy_bw_kernel", 68): (("float",), (1024,)),
    (_LS + "dropout_kernels.cu", "ls_dropout_act_bias_bwd_kernel", 1319): (("ActivationType::kRelu", "float"), (32, 32)),
    (_LS + "dropout_kernels.cu", "ls_quant_dropout_act_bias_bwd_kernel", 1487):
        (("ActivationType::kGelu", "float"), (32, 32)),
    (_LS + "dropout_kernels.cu", "ls_quant_dropout_act_bias_bwd_kernel", 1650):
        (("ActivationType::kRelu", "float"), (32, 32)),
    (_LS + "fused_adam_kernel.cu", "apex_adam_cuda_kernel", 25): (("float", "float"), (512,)),
    (_LS + "fused_adam_kernel.cu", "ls_adam_cuda_kernel", 57): (("float", "float"), (1024,)),
    (_LS + "general_kernels.cu", "fused_add2_kernel", 103): (("float",), (256,)),
    (_LS + "general_kernels.cu", "kernel_concat3_dim1", 185): (("float",), (1024,)),
    (_LS + "normalize_kernels.cu", "ker_ln_bw_dinp", 529): (("float",), (256,)),
    (_LS + "quantize_kernels.cu", "fake_quantize_kernel", 150): (("float",), (1024,)),
    (_LS + "quantize_kernels.cu", "d_cmax_kernel", 470): (("float",), (1024,)),
    (_LS + "quantize_kernels.cu", "quantize_kernel", 599): (("float",), (1024,)),
    (_LS + "softmax_kernels.cu", "ker_attn_softmax_bw", 292): (("float", "1"), (32, 4)),
}

TVM_FFI_INCLUDE = os.environ.get("TVM_FFI_INCLUDE", "/nonexistent/tvm_ffi/include")

_TH_ATTN = "torch_harmonics/attention/csrc/attention_cuda_"

_TE_KT = "transformer_engine::normalization::Kernel_traits<{t}, {t}, {t}, float, uint32_t, {h}, 1, 4, 1, {b}>"
_TE_TUNED, _TE_GENERAL = _TE_KT.format(t="nv_bfloat16", h=1024, b=16), _TE_KT.format(t="float", h=128, b=4)
_TE_FINAL = "transformer_engine::normalization::Kernel_traits_finalize<1024, nv_bfloat16, nv_bfloat16, nv_bfloat16, " \
    "float, uint32_t, 1024, 4>"
_TE_EMPTY, _TE_FP8 = "transformer_engine::Empty", "__nv_fp8_e4m3"
TRANSFORMER_ENGINE = {
    # (the tuned launchers' bf16 traits at hidden 1024, 4 warps a block; the general ones' fp32 at 128 a CTA;
    # the tuned finalizers at 32 warps, the general ones at 32 x 4 (a warp per row of partials); the pointwise
    # and cast kernels over GELU/SiLU or none (nullptr), bf16 or fp32 to FP8, at their own block constants)
    ("common/normalization/layernorm/ln_fwd_kernels.cuh", "ln_fwd_tuned_kernel", 20): ((_TE_TUNED,), (128,)),
    ("common/normalization/layernorm/ln_fwd_kernels.cuh", "ln_fwd_general_kernel", 156): ((_TE_GENERAL,), (128,)),
    ("common/normalization/layernorm/ln_bwd_kernels.cuh", "ln_bwd_tuned_kernel", 16): ((_TE_TUNED,), (128,)),
    ("common/normalization/layernorm/ln_bwd_kernels.cuh", "ln_bwd_finalize_tuned_kernel", 203): ((_TE_FINAL,), (1024,)),
    ("common/normalization/layernorm/ln_bwd_kernels.cuh", "ln_bwd_general_kernel", 323): ((_TE_GENERAL,), (128,)),
    ("common/normalization/layernorm/ln_bwd_kernels.cuh", "ln_bwd_finalize_general_kernel", 505): (
        ("float", "float", "4", "1", "4", "32"), (32, 4)),
    ("common/normalization/rmsnorm/rmsnorm_fwd_kernels.cuh", "rmsnorm_fwd_tuned_kernel", 19): ((_TE_TUNED,), (128,)),
    ("common/normalization/rmsnorm/rmsnorm_fwd_kernels.cuh", "rmsnorm_fwd_general_kernel", 148): ((_TE_GENERAL,), (128,)),
    ("common/normalization/rmsnorm/rmsnorm_bwd_kernels.cuh", "rmsnorm_bwd_tuned_kernel", 34): ((_TE_TUNED, "false"), (128,)),
    ("common/normalization/rmsnorm/rmsnorm_bwd_kernels.cuh", "rmsnorm_bwd_finalize_tuned_kernel", 204): ((_TE_FINAL,), (1024,)),
    ("common/normalization/rmsnorm/rmsnorm_bwd_kernels.cuh", "rmsnorm_bwd_general_kernel", 308): ((_TE_GENERAL, "true"), (128,)),
    ("common/normalization/rmsnorm/rmsnorm_bwd_kernels.cuh", "rmsnorm_bwd_finalize_general_kernel", 470): (
        ("float", "float", "4", "1", "4", "32"), (32, 4)),
    ("common/util/vectorized_pointwise.h", "unary_kernel", 174): (
        ("4", "true", "float", _TE_EMPTY, "transformer_engine::gelu<float, float>", "nv_bfloat16", _TE_FP8), (512,)),
    ("common/util/vectorized_pointwise.h", "unary_grad_kernel", 229): (
        ("4", "true", "float", _TE_EMPTY, "transformer_engine::dgelu<float, float>", "nv_bfloat16", "nv_bfloat16",
         _TE_FP8), (512,)),
    ("common/util/vectorized_pointwise.h", "gated_act_kernel", 406): (
        ("4", "true", "float", _TE_EMPTY, "transformer_engine::silu<float, float>", "nv_bfloat16", _TE_FP8), (512,)),
    ("common/util/vectorized_pointwise.h", "dgated_act_kernel", 506): (
        ("4", "true", "float", _TE_EMPTY, "transformer_engine::silu<float, float>",
         "transformer_engine::dsilu<float, float>", "nv_bfloat16", "nv_bfloat16"), (512,)),
    ("common/util/cast_kernels.cuh", "cast_mxfp8_2D_kernel", 47): (
        ("false", "false", "false", _TE_EMPTY, "nullptr", "nv_bfloat16", _TE_FP8, "true", "true", "64", "64", "64"),
        (64,)),
    ("common/util/cast_kernels.cuh", "cast_fp8_2D_kernel", 1083): (
        ("false", "false", _TE_EMPTY, "nullptr", "nv_bfloat16", _TE_FP8), (128,)),
    ("common/util/cast_kernels.cuh", "cast_fp8_1D_kernel", 1273): (("false", _TE_EMPTY, "nullptr", "float", _TE_FP8), (128,)),
    ("common/util/cast_kernels.cuh", "reduce_dbias_kernel", 1378): (("4", "nv_bfloat16"), (256,)),
    ("common/util/cast_gated_kernels.cuh", "cast_fp8_gated_kernel", 49): (
        ("false", _TE_EMPTY, "transformer_engine::silu<float, float>", "transformer_engine::dsilu<float, float>",
         "nv_bfloat16", _TE_FP8), (512,)),
    ("common/util/cast_gated_kernels.cuh", "cast_mxfp8_gated_kernel", 305): (
        ("false", _TE_EMPTY, "transformer_engine::silu<float, float>", "transformer_engine::dsilu<float, float>",
         "nv_bfloat16", _TE_FP8, "true", "false", "64"), (64,)),
    ("common/util/dequantize_kernels.cuh", "dequantize_mxfp8_kernel", 54): (("__nv_fp8_e4m3", "nv_bfloat16", "1", "32"), (128,)),
    ("common/util/dequantize_kernels.cuh", "dequantize_fp4_kernel", 339): (("nv_bfloat16",), (512,)),
}
TE_SYSTEM_INCLUDES = tuple(d for d in os.environ.get("TE_SYSTEM_INCLUDES", "").split(os.pathsep) if d)
"""cuDNN's, NCCL's, cuDNN frontend's and cuRANDDx's include folders (``nvidia/{cudnn,nccl}/include`` of PyTorch's CUDA
build, the ``include`` of an nvidia-cudnn-frontend wheel, ``nvidia/mathdx/include`` of an nvidia-mathdx wheel), for
Transformer Engine's headers."""

_FAIRSEQ = "fairseq/examples/operators/alignment_train_kernel.cu"

_FT = "fast_transformers/"

LIBRARIES = {
    # setup.py: PyTorch's extension flags; C++20 for torch 2.14's headers. Efficient-attention research code:
    # linear attention's causal products (templates over the head size, at the launchers' blocks for E 64),
    # local attention (functor and indexing-policy templates at 1,024 threads), clustered and sparse
    # products, hashing, Hamming clustering
    "pytorch-fast-transformers-0.4.0": Library(
        (".",), {(_FT + "causal_product/causal_product_cuda.cu", "lmha_low_occupancy_kernel", 86): (
                     ("64", "false", "4"), (128,)),
                 (_FT + "causal_product/causal_product_cuda.cu", "lmha_kernel", 424): (("64", "1", "false"), (64,)),
                 (_FT + "causal_product/causal_product_cuda.cu", "lmha_bwd_kernel", 829): (("64", "1"), (128,)),
                 (_FT + "local_product/local_product_cuda.cu", "sliding_dot_copy_kernel", 130): (("lp_copy",), (1024,)),
                 (_FT + "local_product/local_product_cuda.cu", "sliding_weighted_average", 406): (
                     ("ForwardFactorIndexing<32, 32, 32>",), (1024,))}),
    # setup.py: PyTorch's extension flags (BuildExtension's COMMON_NVCC_FLAGS: the half operators and
    # conversions off, which its kernels' comparisons of c10::Half need); C++20 for torch 2.14's headers.
    # Isotonic regression (soft sort and rank), one thread a row at the launchers' 1,024
    # setup.py: PyTorch's extension flags (BuildExtension's defines) with WITH_CUDA and -O2; C++20 for torch
    # 2.14's headers. PyG's sparse matrices (the oldest torch-sparse sdist on PyPI with CUDA files): CSR
    # conversions, random walks, and the merge-based SpMM templated over the reduction, at 256 threads
    "torch-sparse-0.6.9": Library(
        ("csrc",), {("csrc/cuda/spmm_cuda.cu", "spmm_kernel", 13): (("float", "MAX", "true"), (256,)),
                    ("csrc/cuda/spmm_cuda.cu", "spmm_value_bw_kernel", 156): (("float", "MEAN"), (256,))},
        defines=("WITH_CUDA", *PYTORCH_EXTENSION_DEFINES)),
    # setup.py: PyTorch's extension flags (BuildExtension's defines), relaxed constexpr and extended lambdas, its
    # src/ and src/3rdparty folders, BLAS's cblas.h (Debian's libopenblas-dev); C++20 for torch 2.14's headers.
    # Sparse 3-D convolution: only math_functions_gpu.cu compiles with CUDA 13 (the others derive from
    # thrust::unary_function, which CCCL 3 removed); its kernels at CUDA_NUM_THREADS (128), in float
    "minkowskiengine-0.5.4": Library(
        ("src", "src/3rdparty"), {}, files=("src/math_functions_gpu.cu",), defines=PYTORCH_EXTENSION_DEFINES,
        flags=("--expt-relaxed-constexpr", "--expt-extended-lambda"),
        system_includes=("/usr/include/x86_64-linux-gnu",),
        every_kernel={"src/math_functions_gpu.cu": (("float",), (128,))}),
    "torchsort-0.1.9": Library((".",), {}, every_kernel={"torchsort/isotonic_cuda.cu": (("float",), (1024,))},
                               defines=PYTORCH_EXTENSION_DEFINES),
    # setup.py: PyTorch's extension flags with WITH_CUDA and its include/ folder; C++20 for torch 2.14's
    # headers. In-place activated batch norm: kernel templates in a header its .cu file includes, over the
    # scalar, accumulator, parameter and index types and the activation, at the launchers' 2-D blocks
    "inplace-abn-1.1.0": Library(
        ("include",), {}, files=("src/inplace_abn_cuda.cu",), defines=("WITH_CUDA=1",),
        header_kernels={"src/inplace_abn_cuda.cu": (
            ("statistics_kernel", ("float", "float", "int32_t"), (32, 16)),
            ("reduce_statistics_kernel", ("float", "int32_t"), (256,)),
            ("forward_kernel", ("float", "float", "float", "int32_t", "Activation::LeakyReLU"), (32, 2)),
            ("backward_reduce_kernel", ("float", "float", "float", "int32_t", "Activation::ELU"), (32, 16)),
            ("backward_kernel", ("float", "float", "float", "int32_t"), (32, 2)))}),
    # setup.py: PyTorch's extension flags; C++20 for torch 2.14's headers. Monotonic alignment training
    # (the one CUDA file fairseq 0.12.2's sdist carries): CUB block scans at SCAN_BLOCK (512) threads, the
    # rest over BLOCK_DIM_X x BLOCK_DIM_Y (128 x 8), alpha's initialisation on one thread, in float
    "fairseq-0.12.2": Library(
        (".",), {(_FAIRSEQ, "oneMinusPKernel", 91): (("float",), (128, 8)),
                 (_FAIRSEQ, "innermostScanKernel", 108): (("float", "512"), (512,)),
                 (_FAIRSEQ, "clampKernel", 144): (("float",), (128, 8)),
                 (_FAIRSEQ, "initAlphaCUDAKernel", 169): (("float",), (1,)),
                 (_FAIRSEQ, "alignmentTrainCUDAKernel", 181): (("float", "512"), (512,))}, files=(_FAIRSEQ,)),
    # the transformer_engine_torch sdist carries its common library's headers (common_headers, the root): the
    # kernels are templates there (the norms' traits, which their .cu files include first, given with
    # -include); C++17 and relaxed constexpr as its CMake build, its include/ folder with -I, cuDNN's, NCCL's
    # and MathDx's with -isystem (TE_SYSTEM_INCLUDES). Norms (tuned and general, forward, backward and their
    # finalizers), pointwise activations, FP8/MXFP8 casts (TMA), dequantisation
    "transformer-engine-torch-2.9.0": Library(
        (".", "common/include"), TRANSFORMER_ENGINE, system_includes=TE_SYSTEM_INCLUDES,
        files=tuple(f"common/{f}" for f in (
            "normalization/layernorm/ln_fwd_kernels.cuh", "normalization/layernorm/ln_bwd_kernels.cuh",
            "normalization/rmsnorm/rmsnorm_fwd_kernels.cuh", "normalization/rmsnorm/rmsnorm_bwd_kernels.cuh",
            "util/vectorized_pointwise.h", "util/cast_kernels.cuh", "util/cast_gated_kernels.cuh",
            "util/dequantize_kernels.cuh")), flags=("--expt-relaxed-constexpr",), std="c++17",
        pre_includes=("common/normalization/kernel_traits.h",)),
    # setup.py: PyTorch's extension flags with WITH_CUDA, CUDA_HAS_FP16, the half operators off and -O3;
    # C++20 for torch 2.14's headers. Deformable convolution v4 and flash deformable attention: kernel
    # templates in headers each .cu file includes (over the scalar, the elements a thread moves, the
    # vector type that moves them, the levels, the points and the softmax), at D / d_stride x G x the
    # queries a block takes (float, 4 at a time as uint4, D 64, 4 groups, 64 threads a block)
    "dcnv4-1.0.0.post2": Library(
        ("src",), {}, files=("src/cuda/dcnv4_cuda.cu", "src/cuda/flash_deform_attn_cuda.cu"),
        header_kernels={
            "src/cuda/dcnv4_cuda.cu": tuple((name, ("float", "4", "uint4", "1", "9", "true"), (16, 4, 1)) for name in (
                "forward_kernel_dcn", "forward_kernel_dcn_reg", "backward_kernel_dcn",
                "backward_kernel_dcn_warp_primitive")),
            "src/cuda/flash_deform_attn_cuda.cu": tuple((name, ("float", "4", "uint4", "1", "8"), (16, 4, 1)) for name in (
                "forward_kernel", "forward_kernel_reg", "backward_kernel", "backward_kernel_warp_primitive"))},
        defines=("WITH_CUDA", "CUDA_HAS_FP16=1", "__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__",
                 "__CUDA_NO_HALF2_OPERATORS__")),
    # setup.py: PyTorch's extension flags with -O3 and NDEBUG; C++20 for torch 2.14's headers. Spherical
    # neural operators: attention on the sphere (generic kernels at 32 x 2 over float4, special ones at
    # BDIM_X x BDIM_Y with their local-array length NLOC, as the launchers' switch on the channels picks),
    # its layout transposes (header templates at 32 x 32) and DISCO convolutions (NTH threads, ELXTH
    # elements each)
    "torch-harmonics-0.8.1": Library(
        ("torch_harmonics/attention/csrc", "torch_harmonics/disco/csrc"), {
            (_TH_ATTN + "fwd.cu", "s2_attn_fwd_generic_vec_k", 54): (("64", "float4"), (32, 2)),
            (_TH_ATTN + "fwd.cu", "s2_attn_fwd_special_vec_k", 156): (("128", "1", "0", "9", "float"), (128,)),
            (_TH_ATTN + "bwd.cu", "s2_attn_bwd_generic_vec_k", 60): (("64", "float4"), (32, 2)),
            (_TH_ATTN + "bwd.cu", "s2_attn_bwd_special_vec_k", 283): (("32", "2", "1", "1", "float"), (32, 2)),
            ("torch_harmonics/disco/csrc/disco_cuda_fwd.cu", "disco_fwd_blk_k", 152): (
                ("64", "2", "float", "float"), (64,)),
            ("torch_harmonics/disco/csrc/disco_cuda_bwd.cu", "disco_bwd_blk_k", 146): (
                ("128", "3", "1", "double", "double"), (128,))},
        files=(_TH_ATTN + "fwd.cu", _TH_ATTN + "bwd.cu", _TH_ATTN + "utils.cu",
               "torch_harmonics/disco/csrc/disco_cuda_fwd.cu", "torch_harmonics/disco/csrc/disco_cuda_bwd.cu"),
        header_kernels={_TH_ATTN + "utils.cu": (
            ("attention_kernels::permute_to0231_k", ("32", "32", "float"), (32, 32)),
            ("attention_kernels::permute_to0312_k", ("32", "4", "double"), (32, 4)))},
        defines=("NDEBUG",), every_kernel={_TH_ATTN + "utils.cu": ((), (64,))}),
    # setup.py: PyTorch's extension flags with -O3 and VERSION_GE_1_3; C++20 for torch 2.14's headers. Point
    # cloud operators (ball queries, chamfer distance, cubic feature sampling, gridding, three-NN
    # interpolation, instance IoU, furthest point sampling templated on its block size)
    "torch-points-kernels-0.7.0": Library(
        ("cuda/include",), {("cuda/src/sampling_gpu.cu", "furthest_point_sampling_kernel", 16): (("512",), (512,))},
        files=tuple(f"cuda/src/{f}_gpu.cu" for f in ("ball_query", "chamfer_dist", "cubic_feature_sampling",
                                                     "gridding", "interpolate", "metrics", "sampling")),
        defines=("VERSION_GE_1_3",), launched=True,
        every_kernel={f"cuda/src/{f}_gpu.cu": (("float",), (256,)) for f in (
            "chamfer_dist", "cubic_feature_sampling", "gridding")}),
    # setup.py: PyTorch's extension flags; C++20 for torch 2.14's headers. The RNN-T loss: a 32 x 2 block
    # whose two warps scan the alphas and betas, blocks waiting on earlier blocks' counters in global
    # memory; gradients at 1,024 threads, costs at 256
    "warp-rnnt-0.7.0": Library(
        (".",), {("core.cu", "kernel_warp", 248): ((), (32, 2)), ("core_gather.cu", "kernel_warp", 236): ((), (32, 2)),
                 ("core_compact.cu", "kernel_warp_alphas_compact", 29): ((), (32,)),
                 ("core_compact.cu", "kernel_warp_betas_compact", 147): ((), (32,))},
        files=("core.cu", "core_gather.cu", "core_compact.cu"),
        every_kernel={f: ((), (1024,)) for f in ("core.cu", "core_gather.cu", "core_compact.cu")}),
    # setup.py: PyTorch's extension flags with WITH_CUDA and -O2, C++20 for torch 2.14's headers (as
    # torch-scatter's); B-spline bases and weightings of PyG's spline convolution, templated on the scalar
    # type and the spline's degree, at its 1,024 threads
    "torch-spline-conv-1.2.2": Library(
        ("csrc",), {("csrc/cuda/basis_cuda.cu", "spline_basis_fw_kernel", 60): (("float", "1"), (1024,)),
                    ("csrc/cuda/basis_cuda.cu", "spline_basis_bw_kernel", 135): (("float", "2"), (1024,))},
        files=("csrc/cuda/basis_cuda.cu", "csrc/cuda/weighting_cuda.cu"), defines=("WITH_CUDA",),
        every_kernel={"csrc/cuda/weighting_cuda.cu": (("float",), (1024,))}),
    # setup.py: PyTorch's extension flags with WITH_CUDA, CUDA_HAS_FP16 and the half operators off; C++20
    # for torch 2.14's headers. PyTorch3D's k-nearest-neighbour kernels (a min-k structure of its own, versions templated
    # over the dimension and K that a template-template dispatcher instantiates), at 256 threads
    "chamferdist-1.0.3": Library(
        ("chamferdist",), {
            ("chamferdist/knn.cu", "KNearestNeighborKernelV0", 21): (("float",), (256,)),
            ("chamferdist/knn.cu", "KNearestNeighborKernelV1", 60): (("float", "3"), (256,)),
            ("chamferdist/knn.cu", "KNearestNeighborKernelV2", 125): (("float", "3", "4"), (256,)),
            ("chamferdist/knn.cu", "KNearestNeighborKernelV3", 190): (("float", "3", "4"), (256,))},
        files=("chamferdist/knn.cu",),
        defines=("WITH_CUDA", "CUDA_HAS_FP16=1", "__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__",
                 "__CUDA_NO_HALF2_OPERATORS__")),
    # its training ops' builder (lightseq/training/ops/pytorch/builder: C++14, fast math, the half operators
    # on; its kernels' includes folder) and CMakeLists.txt's FP16_MODE and the CUB 1.x it vendors as a SYSTEM
    # include; transformer training kernels (norms,
    # softmax, dropout, quantisation, fused Adam, cross entropy, CRF, embeddings), templates each file's
    # launchers instantiate (the first launch written in literals, or the table's)
    "lightseq-3.0.1": Library(
        ("lightseq/csrc/kernels/includes",), LIGHTSEQ, system_includes=("3rdparty/cub",),
        files=tuple(f"lightseq/csrc/kernels/{f}.cu" for f in (
            "transform_kernels", "embedding_kernels", "softmax_kernels", "dropout_kernels", "crf",
            "normalize_kernels", "general_kernels", "quantize_kernels", "fused_adam_kernel", "cross_entropy")),
        defines=("FP16_MODE",), flags=("--use_fast_math",), std="c++14", launched=True),
    # setup.py: csrc and CUTLASS (third_party, with -I), fast math, the half operators on, extended lambdas,
    # C++17, NDEBUG and PyTorch's stable ABI only (TORCH_STABLE_ONLY: its torch/csrc/stable headers). 2:4
    # sparsification kernels templated over traits structs in an anonymous namespace, launched at
    # their traits' thread grids (4 x 8, 8 x 8)
    "xformers-0.0.35": Library(
        ("xformers/csrc", "third_party/cutlass/include", "third_party/cutlass/tools/util/include"), XFORMERS,
        files=tuple(f"xformers/csrc/sparse24/{f}.cu" for f in (
            "sparse24_apply", "sparse24_apply_dense_output", "sparse24_largest_mask_2d", "sparse24_pack",
            "sparseNM_dense", "sparse24_pack_test")),
        defines=("HAS_PYTORCH", "_ENABLE_EXTENDED_ALIGNED_STORAGE", "NDEBUG", "TORCH_STABLE_ONLY",
                 "TORCH_TARGET_VERSION=0x020a000000000000", "USE_CUDA"),
        undefines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__"),
        flags=("--use_fast_math", "--extended-lambda", "--expt-relaxed-constexpr"), std="c++17"),
    # flashinfer/jit/cpp_ext.py: its vendored CCCL with -I (ahead of the toolkit's), its own headers,
    # csrc, CUTLASS, spdlog and apache-tvm-ffi's headers (TVM_FFI_INCLUDE: that wheel's tvm_ffi/include)
    # with -isystem; C++17, fast math, relaxed constexpr, the dtype switches of jit/core.py. The kernels
    # are templates in its headers that each csrc file's launchers instantiate: include/ and csrc/ are
    # given with -I, as hfuse's error says for a kernel of an -isystem header (it fuses the kernels of
    # the files it reads as the user's own)
    "flashinfer-0.7.4": Library(
        ("include", "csrc", "3rdparty/cccl/cub", "3rdparty/cccl/libcudacxx/include", "3rdparty/cccl/thrust"), {},
        system_includes=(TVM_FFI_INCLUDE, "3rdparty/cutlass/include",
                         "3rdparty/cutlass/tools/util/include", "3rdparty/spdlog/include"),
        files=("csrc/norm.cu", "csrc/rope.cu", "csrc/quantization.cu", "csrc/sampling.cu", "csrc/page.cu"),
        header_kernels=FLASHINFER_074,
        defines=("Py_LIMITED_API=0x03090000", "FLASHINFER_ENABLE_F16", "FLASHINFER_ENABLE_BF16",
                 "FLASHINFER_ENABLE_FP8_E4M3", "FLASHINFER_ENABLE_FP8_E5M2"), std="c++17"),
    # op_builder/builder.py: C++20 on CUDA >= 12.5 (as torch 2.14's headers need), fast math, the half
    # operators on, bf16 on; include_paths of op_builder/*.py (each build its own and the common one;
    # their headers' names are distinct, so one list serves)
    "deepspeed-0.15.4": Library(
        ("includes", "transformer/inference/includes", "fp_quantizer/includes", "spatial/includes"), DEEPSPEED,
        skipped=("cpu/", "xpu/", "aio/", "gds/", "sparse_attention/", "deepspeed4science/"),  # (host, other
        # platforms, and the kernels built on CUTLASS, a library of its own)
        defines=("BF16_AVAILABLE",),
        undefines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__")),
    # cmake/utils.cmake: torch's COMMON_NVCC_FLAGS without the no-half defines (CUDA >= 12), -DENABLE_FP8;
    # its norms, rope, activations, KV cache, MoE alignment and quantisation files (attention and
    # the GEMMs are built on CUTLASS and Marlin)
    "vllm-0.6.3": Library(
        (".",), VLLM, files=tuple(dict.fromkeys(f for f, _, _ in VLLM)), defines=("ENABLE_FP8",),
        flags=("--expt-relaxed-constexpr",)),
    # ggml/src/ggml-cuda/CMakeLists.txt and ggml/src/CMakeLists.txt (Linux, CUDA graphs on): C++17, fast
    # math, extended lambdas; its own headers only (no PyTorch). The backend's dispatcher (ggml-cuda.cu)
    # and the files of template instances (template-instances/) are left out: their kernels come from
    # the headers the other files include
    "ggml-cuda-llama-cpp-python-0.3.16": Library(
        ("../../include", "..", "."), LLAMA, skipped=("ggml-cuda.cu", "template-instances/", "vendors/"),
        defines=("GGML_SCHED_MAX_COPIES=4", "_XOPEN_SOURCE=600", "_GNU_SOURCE", "GGML_CUDA_PEER_MAX_BATCH_SIZE=128",
                 "GGML_CUDA_USE_GRAPHS"),
        flags=("--use_fast_math", "--extended-lambda"), std="c++17"),
    # setup.py: PyTorch's CUDAExtension with no flags of its own (so torch's COMMON_NVCC_FLAGS: the
    # no-half defines kept, relaxed constexpr), C++20 as torch 2.14's headers need. The sdist has the
    # GEMV kernels' files whole (cuda_64/, cuda_256/: one kernel template per bit width, at the block
    # width of its folder, instantiated for float as AT_DISPATCH_FLOATING_TYPES does); exllama/,
    # exllamav2/ and marlin/ lack their headers there
    "auto-gptq-0.7.1": Library(
        (), {}, files=("cuda_64/autogptq_cuda_kernel_64.cu", "cuda_256/autogptq_cuda_kernel_256.cu"),
        defines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_BFLOAT16_CONVERSIONS__",
                 "__CUDA_NO_HALF2_OPERATORS__"), flags=("--expt-relaxed-constexpr",),
        every_kernel={"cuda_64/autogptq_cuda_kernel_64.cu": (("float",), (64,)),
                      "cuda_256/autogptq_cuda_kernel_256.cu": (("float",), (256,))}),
    # as 0.6.3 (CMakeLists.txt: torch's flags without the no-half defines, -DENABLE_FP8), C++20 for
    # torch 2.14's headers; norms, fused norm + fp8 quantisation, activations, rope, KV caches,
    # sampling penalties
    "vllm-0.19.1": Library((".",), VLLM_19, files=tuple(dict.fromkeys(f for f, _, _ in VLLM_19)),
                           defines=("ENABLE_FP8",), flags=("--expt-relaxed-constexpr",)),
    # setup.py: the half/bfloat16 operators on, relaxed constexpr, extended lambdas, fast math; C++20
    # for torch 2.14's headers. CUB block loads and stores through each kernel's traits struct
    "causal-conv1d-1.7.0": Library(
        (".",), CONV1D,
        undefines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_BFLOAT16_OPERATORS__",
                   "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_BFLOAT162_OPERATORS__",
                   "__CUDA_NO_BFLOAT162_CONVERSIONS__"),
        flags=("--expt-relaxed-constexpr", "--extended-lambda", "--use_fast_math")),
    # setup.py as causal-conv1d's; the selective scans' kernels are in the .cuh files each .cu
    # instantiates (CUB block loads, stores, scans and reductions through the traits struct)
    "mamba-ssm-2.3.1": Library(
        ("selective_scan",), {}, files=("selective_scan/selective_scan_fwd_fp16.cu",
                                        "selective_scan/selective_scan_bwd_bf16_real.cu"),
        header_kernels={
            "selective_scan/selective_scan_fwd_fp16.cu": (("selective_scan_fwd_kernel", (
                "Selective_Scan_fwd_kernel_traits<128, 16, 1, true, true, true, true, at::Half, float>",), (128,)),),
            "selective_scan/selective_scan_bwd_bf16_real.cu": (("selective_scan_bwd_kernel", (
                "Selective_Scan_bwd_kernel_traits<128, 16, true, true, true, false, true, at::BFloat16, float>",),
                (128,)),)},
        undefines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_BFLOAT16_OPERATORS__",
                   "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_BFLOAT162_OPERATORS__",
                   "__CUDA_NO_BFLOAT162_CONVERSIONS__"),
        flags=("--expt-relaxed-constexpr", "--extended-lambda", "--use_fast_math")),
    # setup.py: PyTorch's CUDAExtension with no flags of its own (torch's no-half defines and relaxed
    # constexpr), MMCV_WITH_CUDA, its three include folders; C++20 for torch 2.14's headers. The
    # kernels are templates over the scalar type in common/cuda/*_cuda_kernel.cuh, which the files of
    # pytorch/cuda/ include and instantiate (float among their dispatched types), at its
    # THREADS_PER_BLOCK of 512
    "mmcv-2.2.0": Library(
        ("pytorch", "common", "common/cuda"), MMCV, skipped=("parrots/", "mlu/", "mps/", "npu/"),
        defines=("MMCV_WITH_CUDA", "__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__",
                 "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__"),
        flags=("--expt-relaxed-constexpr",), included_kernels=("common/cuda", ("float",), (512,))),
    # library/extensions/cuda/__init__.py: extended lambdas, fast math, QUANTO_CUDA_ARCH (the GPU's, 900
    # here), torch's flags (the no-half defines, relaxed constexpr), C++20 for torch 2.14's headers; the
    # Marlin kernels' stubs for GPUs before sm_80 are left out as the build leaves them
    "optimum-quanto-0.2.7": Library(
        (".",), QUANTO, skipped=("hip/",), inactive=(("marlin/fp8_marlin.cu", 55), ("marlin/gptq_marlin_repack.cu", 14)),
        defines=("QUANTO_CUDA_ARCH=900", "__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__",
                 "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__"),
        flags=("--expt-relaxed-constexpr", "--extended-lambda", "--use_fast_math")),
    # the sdist's setup.py builds nothing itself (the kernels are built at first use): PyTorch's
    # extension flags (the no-half defines, relaxed constexpr), C++20 for torch 2.14's headers. The
    # exllamav2 GEMMs' kernels are in the headers q_gemm.cu instantiates (first block, one row of m);
    # other kernel templates take the first instance their file launches in literals
    "gptqmodel-7.7.0": Library(
        ("exllamav2/cuda", "exllamav3", "."), GPTQMODEL, inactive=(("marlin/gptq_marlin.cu", 95),),
        files=("exllamav2/cuda/q_matrix.cu", "exllamav2/cuda/q_gemm.cu", "awq/quantization/gemv_cuda.cu",
               "awq/quantization/gemm_cuda_gen.cu", "exllamav3/quant/hadamard.cu", "exllamav3/quant/util.cu",
               "gptq_block/gptq_block.cu", "vptq/vptq_kernel.cu", "marlin/gptq_marlin.cu",
               "paroquant/rotation.cu", "hadamard/fast_hadamard_transform_cuda.cu"),
        header_kernels={"exllamav2/cuda/q_gemm.cu": (("gemm_half_q_half_kernel", ("true", "1"), (128,)),
                                                     ("gemm_half_q_half_gptq_kernel", ("true", "1"), (128,)))},
        defines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_BFLOAT16_CONVERSIONS__",
                 "__CUDA_NO_HALF2_OPERATORS__"),
        flags=("--expt-relaxed-constexpr",), launched=True),
    # hqq/kernels/setup_cuda.py: fast math, torch's flags; its dequantisers are templates over the
    # scalar type (float among those dispatched), at its block of 256 (BLOCK_SIZE)
    "hqq-0.2.8": Library((".",), {}, files=("hqq_aten_cuda_kernel.cu",),
                         defines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__",
                                  "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__"),
                         every_kernel={"hqq_aten_cuda_kernel.cu": (("float",), (256,))}),
    # inference_kernels/cuda_kernel.py: torch.utils.cpp_extension.load with no flags of its own (torch's)
    "aqlm-1.1.7": Library((".",), AQLM, files=("cuda_kernel.cu",),
                          defines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__",
                                   "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__"),
                          flags=("--expt-relaxed-constexpr",)),
    # setup.py: -O3 and relaxed constexpr (torch's flags besides); its csrc folder (PyTorch
    # Geometric's scatter and segment reductions: an enum of reductions as a template argument,
    # a Reducer class template of static members, atomics of its own)
    "torch-scatter-2.1.2": Library(
        (".",), SCATTER, files=("cuda/scatter_cuda.cu", "cuda/segment_coo_cuda.cu", "cuda/segment_csr_cuda.cu"),
        defines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_BFLOAT16_CONVERSIONS__",
                 "__CUDA_NO_HALF2_OPERATORS__"), flags=("--expt-relaxed-constexpr",)),
    # csrc/layer_norm/setup.py (flash-attn's dropout_layer_norm extension): the half and bfloat16
    # operators on, relaxed constexpr, extended lambdas, fast math, its own folder; C++20 for torch
    # 2.14's headers. The kernels are in the .cuh files each ln_*.cu instantiates through its traits
    "flash-attn-2.8.3-layer-norm": Library(
        (".",), {}, files=tuple(FLASH_LN), header_kernels=FLASH_LN,
        undefines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_BFLOAT16_OPERATORS__",
                   "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_BFLOAT162_OPERATORS__",
                   "__CUDA_NO_BFLOAT162_CONVERSIONS__"),
        flags=("--expt-relaxed-constexpr", "--extended-lambda", "--use_fast_math")),
    "flash-attn-2.4.2-extras": Library(
        (".",), XENTROPY, files=("xentropy/xentropy_kernel.cu", *FLASH_EXTRAS), header_kernels=FLASH_EXTRAS,
        defines=("ENABLE_BF16",),
        undefines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_BFLOAT16_OPERATORS__",
                   "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_BFLOAT162_OPERATORS__",
                   "__CUDA_NO_BFLOAT162_CONVERSIONS__"),
        flags=("--expt-relaxed-constexpr", "--extended-lambda", "--use_fast_math")),
    # setup.py: -O2 and WITH_CUDA (torch's flags besides); csrc/cuda (PyTorch Geometric's clustering:
    # farthest point sampling, k-NN, radius, graclus matching, random walks); its kernels are
    # templates over the scalar type (float among those dispatched) at each file's THREADS (256 or 1024)
    "torch-cluster-1.6.3": Library(
        (".",), {}, files=tuple(f"cuda/{name}_cuda.cu" for name in ("fps", "graclus", "grid", "knn", "nearest",
                                                                    "radius", "rw")),
        defines=("WITH_CUDA", "__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__",
                 "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__"),
        flags=("--expt-relaxed-constexpr",),
        every_kernel={f"cuda/{name}_cuda.cu": (("float",), (threads,)) for name, threads in (
            ("fps", 256), ("graclus", 1024), ("grid", 1024), ("knn", 256), ("nearest", 1024), ("radius", 256),
            ("rw", 1024))}),
    # extensions/pybind/*/ (each op's nvcc_flags, and cuda_extension.py's COLOSSAL_WITH_CUDA): -O3, fast
    # math, the half operators on, relaxed constexpr, the version macros; include folder
    # extensions/csrc (common/, funcs/). Inference ops (rotary + cache, flash decoding, KV-cache
    # copies, fp8), norms, softmax, MoE, and the fused optimisers' functors run by
    # multi_tensor_apply.cuh's variadic kernel
    "colossalai-0.5.0": Library(
        (".",), COLOSSAL, skipped=("arm/", "x86/"), header_kernels=COLOSSAL_OPTIMISERS,
        defines=("COLOSSAL_WITH_CUDA", "VERSION_GE_1_1", "VERSION_GE_1_3", "VERSION_GE_1_5",
                 "THRUST_IGNORE_CUB_VERSION_CHECK"),
        undefines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__"),
        flags=("--expt-relaxed-constexpr", "--extended-lambda", "--use_fast_math"), launched=True),
    # gsplat/cuda/_backend.py (Gaussian splatting, graphics-style HPC code on GLM's vector and matrix
    # templates, cooperative groups in the rasterizers): -O3, fast math, include/ and the bundled
    # third_party/glm as -I (read as the user's own); torch's flags besides. Kernels are templates
    # over the scalar type (float), the rasterizers over the channel count too (3), at 16 x 16 tiles
    "gsplat-1.5.3": Library(
        ("include", "csrc/third_party/glm"), {}, skipped=("third_party/",),
        defines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_BFLOAT16_CONVERSIONS__",
                 "__CUDA_NO_HALF2_OPERATORS__"),
        flags=("--use_fast_math", "--expt-relaxed-constexpr"),
        every_kernel={**{f"csrc/{name}.cu": (("float",), (256,)) for name in (
            "AdamCUDA", "IntersectTile", "NullCUDA", "Projection2DGSFused", "Projection2DGSPacked",
            "ProjectionEWA3DGSFused", "ProjectionEWA3DGSPacked", "ProjectionEWASimple", "ProjectionUT3DGSFused",
            "QuatScaleToCovarCUDA", "RelocationCUDA", "SphericalHarmonicsCUDA")},
            **{f"csrc/{name}.cu": (("float",), (16, 16)) for name in ("RasterizeToIndices2DGS",
                                                                    "RasterizeToIndices3DGS")},
            **{f"csrc/RasterizeToPixels{name}.cu": (("3", "float"), (16, 16)) for name in (
                "2DGSBwd", "2DGSFwd", "3DGSBwd", "3DGSFwd", "FromWorld3DGSBwd", "FromWorld3DGSFwd")}}),
    # setup.py: -O3 and --expt-relaxed-constexpr (no fast math); nerfacc/cuda/csrc (NeRF ray marching,
    # importance sampling, lens undistortion: kernels in an anonymous namespace's ``device``); the scans
    # are templates in include/utils_scan.cuh over (type, 16 x 32 threads, functor, iterators), which
    # scan.cu instantiates with std::plus<float> on raw pointers; the other kernels run 512 threads
    "nerfacc-0.5.3": Library(
        (".",), {}, files=("camera.cu", "grid.cu", "pdf.cu", "scan.cu"),
        header_kernels={"scan.cu": tuple(
            (name, ("float", "16", "32", "std::plus<float>", "float *", "int64_t *"), (16, 32))
            for name in ("device::inclusive_scan_kernel", "device::exclusive_scan_kernel"))},
        flags=("--expt-relaxed-constexpr",),
        every_kernel={name: ((), (512,)) for name in ("camera.cu", "grid.cu", "pdf.cu")}),
    # setup.py: --optimize=2 (torch's flags besides), include folder csrc; ops.cu includes the op
    # headers, whose kernels are the indices of a block-sparse matrix (32 threads) and the replication
    # of a value per bin (64, for c10::Half among others); CUB wrapped in the namespace megablocks
    "megablocks-0.10.0": Library(
        (".",), {}, files=("ops.cu",),
        header_kernels={"ops.cu": (
            ("megablocks::construct_indices::ConstructIndicesKernel", (), (32,)),
            ("megablocks::replicate::ReplicateForwardKernel", ("c10::Half", "64"), (64,)))},
        flags=("--expt-relaxed-constexpr",)),
    # setup.py: -lineinfo -O3 with torch's flags (the half operators off, relaxed constexpr);
    # exllamav2_ext/cuda (GPTQ/EXL2 quantised GEMM and reconstruction, packing, quantisation with
    # error feedback, RMS norm, rope, SiLU-mul); each kernel at its launcher's block, the templates
    # at one instance the launchers pick (4-bit packing, rms_norm for 4 blocks a warp, half2)
    "exllamav2-0.0.4": Library(
        (".",), {
            ("pack_tensor.cu", "pack_columns_kernel", 115): (("4",), (32, 16)),
            ("q_matrix.cu", "reconstruct_gptq_kernel", 145): ((), (128,)),
            ("q_matrix.cu", "reconstruct_kernel", 267): ((), (128,)),
            ("q_mlp.cu", "silu_mul_kernel", 49): (("true",), (32, 4)),
            ("quantize.cu", "adjust_error_row_kernel", 173): ((), (32, 1)),
            ("rms_norm.cu", "rms_norm_kernel", 26): (("4",), (1024,)),
            ("rope.cu", "rope_cuda_kernel", 23): (("true",), (32, 4)),
        },
        header_kernels={"q_gemm.cu": (("gemm_half_q_half_kernel", ("true", "1"), (128,)),
                                      ("gemm_half_q_half_gptq_kernel", ("true", "1"), (128,)))},
        defines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_BFLOAT16_CONVERSIONS__",
                 "__CUDA_NO_HALF2_OPERATORS__"),
        flags=("--expt-relaxed-constexpr",),
        every_kernel={"pack_tensor.cu": ((), (32, 16)), "q_attn.cu": ((), (32, 1, 4)), "q_gemm.cu": ((), (256,)),
                      "q_matrix.cu": ((), (32,)), "quantize.cu": ((), (32, 32))}),
}
