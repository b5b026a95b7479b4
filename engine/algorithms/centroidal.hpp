// Centre of mass and centroidal momentum (Orin, Goswami & Lee, "Centroidal dynamics of a humanoid
// robot", Auton. Robots 35, 2013, the quantities of Pinocchio's centerOfMass, jacobianCenterOfMass
// and ccrba; spatial algebra of Featherstone 1987, ch. 2-3 and §7.2). World axes throughout.
//   c     = Σ_i m_i c_i / m                    centre of mass (m = total mass)
//   ċ     = J_c v,  J_c[:, k] = (m^c_i ⁰v_k + ⁰ω_k × h^c_i) / m
//   h_G   = (m ċ,  Σ_i [I_i ω_i + m_i (c_i − c) × ċ_i])   momentum, angular part about c
//   A_G[:, k] = ᴳX⁰* I^c_i ⁰S_k                      so that h_G = A_G v
// where k is a column of joint i, ⁰S_k = (⁰v_k, ⁰ω_k) is that column in the world frame,
// I^c_i the world-frame composite inertia of i's subtree (mass m^c_i, first moment h^c_i about
// the world origin) and ᴳX⁰* moves a force's moment from the world origin to c: n_G = n_O − c × f.
// A model without mass has its centre of mass at the world origin, by convention.
#pragma once

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// What the functions below bind in Data; their results are in the CentroidalWorkspace.
inline constexpr WorkspaceSet kCentroidalWorkspaces = WorkspaceSet::of<CentroidalWorkspace>();

// The centre of mass (com). Leaves data.oMi current.
const Vec3& center_of_mass(const Model& model, Data& data, const ConstVectorRef& q);
// The centre of mass and its velocity (com, vcom). Leaves data.oMi and data.v current.
void center_of_mass(const Model& model, Data& data, const ConstVectorRef& q,
                    const ConstVectorRef& v);
// J_c (3 x nv, Jcom), with com. Leaves data.oMi, data.oS and the composite inertias current.
const Eigen::Matrix<double, 3, Eigen::Dynamic>& center_of_mass_jacobian(const Model& model,
                                                                        Data& data,
                                                                        const ConstVectorRef& q);
// h_G ([linear; angular about c], world axes; hg), with com and vcom.
const Force& centroidal_momentum(const Model& model, Data& data, const ConstVectorRef& q,
                                 const ConstVectorRef& v);
// A_G (6 x nv, [linear; angular] rows; Ag), with com. Leaves data.oMi, data.oS and the composite
// inertias current.
const Eigen::Matrix<double, 6, Eigen::Dynamic>& centroidal_momentum_matrix(const Model& model,
                                                                           Data& data,
                                                                           const ConstVectorRef& q);

}  // namespace torqued
