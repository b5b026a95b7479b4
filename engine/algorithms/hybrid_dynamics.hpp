// Hybrid dynamics: each DOF has either its acceleration or its force given, and the algorithm
// finds the others (Featherstone 1987, §7.5.2; Kim 2012, §2.3, Table 4).
#pragma once

#include <cstdint>
#include <span>

#include "engine/algorithms/aba.hpp"

namespace torqued {

// Which of a DOF's acceleration q̈_k and force τ_k is given.
enum class DofInput : std::uint8_t { kForce, kAcceleration };

// Completes q̈ and τ: `input` has one entry per DOF (nv); q̈_k is read from `ddq` where
// input[k] is kAcceleration and τ_k from `tau` where it is kForce (the other entries are
// ignored). The complete vectors go to data.ddq and data.tau, so that
//   rnea(q, v, data.ddq, f_ext) = data.tau  and  aba(q, v, data.tau, f_ext) = data.ddq.
// `external_forces` as in rnea(). All-kForce is ABA and all-kAcceleration is RNEA.
// Binds kAbaWorkspaces. Throws SingularSystemError when a force-given joint moves no inertia,
// and std::invalid_argument when `input` does not have nv entries.
void hybrid_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                     const ConstVectorRef& v, const ConstVectorRef& ddq, const ConstVectorRef& tau,
                     std::span<const DofInput> input, std::span<const Force> external_forces = {});

}  // namespace torqued
