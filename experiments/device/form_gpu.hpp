// Forms (reference/gemm_form.hpp) on the GPU: the Device interface's form_inputs, form_reference and
// measure_form of a GPU (runner.cu's GpuDevice calls these), and the exact reference of a form on the GPU.
//
//  * operands: A (rows, K) and B (K, parts N) generated on the GPU bit for bit as generate() makes them (the
//    plain problem of the stacked size), C0 and the bias likewise in the epilogue's formats; packed once per
//    layout into each part's place (batch t at t M K / t K N elements; a column-major A stacks its parts'
//    blocks) and checked after each kernel against a fresh packing (a kernel that writes into A, B, C0 or the
//    bias gets an error row).
//  * reference: per part, the augmented operands A'_t and B'_t^T (gemm_form.hpp) built on the GPU as binary64
//    (every value exact: alpha a, s b and beta s are products of two values of at most 24 bits) and handed to
//    the GPU's exact engine (exact_reference_gpu.hpp exact_gemm_gpu_device_bt); the parts stacked. Where the
//    GPU cannot be exact (GpuReferenceUnavailable) the CPU engine computes it (exact_form), saying so on
//    stderr, as for plain problems. MPFR spot checks run on the host on the augmented row and column read back
//    from the GPU, while the first kernel runs.
//  * measurement: the timing helper (runner.cu time_form_launches) with the form's GemmArgs, the stacked C
//    widened to binary64 on the GPU (fp32, fp16, bf16, e4m3, e5m2 outputs) and judged there by the GPU
//    statistics; amax read back where the kernel takes an output scale.
//
// Plain C++ header (no CUDA types).
#pragma once
#include <cstdint>
#include <memory>

#include "experiments/device/exact_reference_gpu.hpp"
#include "experiments/device/runner.hpp"
#include "reference/gemm_form.hpp"

namespace gemmlab::device {

std::unique_ptr<FormInputs> gpu_form_inputs(int device, const Distribution& d, const GemmForm& f, const FormShape& s,
                                            Format in, const Epilogue& e, std::uint64_t seed, int threads);

std::unique_ptr<ProblemReference> gpu_form_reference(int device, FormInputs& in, const ReferenceOptions& opt);

Measurement gpu_measure_form(int device, const Kernel& k, FormInputs& in, ProblemReference& ref,
                             const TimingOptions& opt, const BoundModel& model, bool keep_output, int threads);

// The exact reference of a form's operands made by gpu_form_inputs, on the current GPU (the stacked parts).
// Throws GpuReferenceUnavailable where the GPU cannot be exact, std::invalid_argument for other inputs.
GpuReference exact_form_gpu(FormInputs& in);

}  // namespace gemmlab::device
