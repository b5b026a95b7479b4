// TORQUED_AVX2_CLONES: the attribute of the engine's kernels written for the instruction set
// (tree_sparse_product.cpp, matrix_product.cpp), compiled for the x86-64 baseline and for AVX2, the
// version chosen when the program starts (GCC function multiversioning). Each kernel is defined in
// one translation unit: clang emits a target_clones function's resolver in every unit that
// defines it, and an inline definition in a header, compiled into two units, did not link.
#pragma once

// No clones where the baseline has AVX2 already (a build for the local CPU: its wider baseline
// could not be inlined into the AVX2 clone), nor under ThreadSanitizer: the clones' resolver, an
// ifunc that the dynamic loader runs before the sanitizer's runtime exists, would be instrumented
// and crash the program at start-up.
#if defined(__AVX2__) || defined(__SANITIZE_THREAD__)
#define TORQUED_AVX2_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TORQUED_AVX2_CLONES
#endif
#endif
#ifndef TORQUED_AVX2_CLONES
#define TORQUED_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#endif
