#!/usr/bin/env bash
# Writes the binary seeds of tests/fuzz/corpus/ from text: RegisterModelRequests (the bundled
# repository's .txtpb models, and specs and URDF written here), SessionRequests, SolveRequests and
# Mpc streams, in protobuf text format encoded with protoc into the wire format the server
# decodes. Run it after changing a bundled model or the API; the URDF and DH seeds are links to
# deploy/models and plain files.
set -euo pipefail
cd "$(dirname "$0")/../.."
register=tests/fuzz/corpus/register_model_fuzzer
session=tests/fuzz/corpus/session_request_fuzzer
solve=tests/fuzz/corpus/solve_request_fuzzer
mpc=tests/fuzz/corpus/mpc_request_fuzzer
mkdir -p "$register" "$session" "$solve" "$mpc"

encode() {  # MESSAGE OUTPUT, text on standard input
  protoc --proto_path=proto --encode="torqued.v1.$1" torqued/v1/dynamics.proto >"$2"
}

for model in deploy/models/*.txtpb; do
  [[ $model == *.options.txtpb ]] && continue
  encode RegisterModelRequest "$register/$(basename "${model%.txtpb}")" <"$model"
done

# Every joint type of an explicit spec, on a floating base, with a weld loop to the world.
encode RegisterModelRequest "$register/joint_types" <<'TEXT'
name: "joint_types"
base: BASE_TYPE_FLOATING
spec {
  links { name: "base" inertial { mass: 2 inertia { ixx: 0.1 iyy: 0.1 izz: 0.1 } } }
  links { name: "a" inertial { mass: 1 origin { xyz { x: 0.1 } } inertia { ixx: 0.01 iyy: 0.01 izz: 0.01 } } }
  links { name: "b" inertial { mass: 1 inertia { ixx: 0.01 iyy: 0.02 izz: 0.02 } } }
  links { name: "c" inertial { mass: 0.5 inertia { ixx: 0.01 iyy: 0.01 izz: 0.01 } } }
  links { name: "d" inertial { mass: 0.5 inertia { ixx: 0.01 iyy: 0.01 izz: 0.01 } } }
  links { name: "e" inertial { mass: 0.2 inertia { ixx: 0.001 iyy: 0.001 izz: 0.001 } } }
  links { name: "f" }
  joints { name: "j_spherical" type: JOINT_TYPE_SPHERICAL parent_link: "base" child_link: "a" }
  joints { name: "j_helical" type: JOINT_TYPE_HELICAL parent_link: "a" child_link: "b"
           origin { xyz { x: 0.2 } rpy { z: 0.3 } } axis { x: 1 y: 1 } pitch: 0.01 }
  joints { name: "j_planar" type: JOINT_TYPE_PLANAR parent_link: "b" child_link: "c" }
  joints { name: "j_prismatic" type: JOINT_TYPE_PRISMATIC parent_link: "base" child_link: "d"
           axis { z: 1 } limits { lower: -0.5 upper: 0.5 velocity: 1 effort: 10 } }
  joints { name: "j_continuous" type: JOINT_TYPE_CONTINUOUS parent_link: "d" child_link: "e" axis { y: 1 } }
  joints { name: "j_fixed" type: JOINT_TYPE_FIXED parent_link: "e" child_link: "f" origin { xyz { z: 0.1 } } }
  loop_closures { name: "weld" type: CONSTRAINT_TYPE_WELD link1: "f" link2: "world" origin2 { xyz { z: 0.3 } } }
}
TEXT

# A URDF in a request, with a point loop between its links.
encode RegisterModelRequest "$register/urdf_with_loop" <<'TEXT'
name: "urdf_with_loop"
gravity { z: -9.81 }
urdf: "<robot name=\"r\"><link name=\"base\"/><link name=\"l1\"><inertial><mass value=\"1\"/><inertia ixx=\"0.01\" ixy=\"0\" ixz=\"0\" iyy=\"0.01\" iyz=\"0\" izz=\"0.01\"/></inertial></link><link name=\"l2\"><inertial><origin xyz=\"0.1 0 0\"/><mass value=\"1\"/><inertia ixx=\"0.01\" ixy=\"0\" ixz=\"0\" iyy=\"0.01\" iyz=\"0\" izz=\"0.01\"/></inertial></link><joint name=\"j1\" type=\"revolute\"><parent link=\"base\"/><child link=\"l1\"/><axis xyz=\"0 0 1\"/><limit lower=\"-1\" upper=\"1\" effort=\"1\" velocity=\"1\"/></joint><joint name=\"j2\" type=\"continuous\"><parent link=\"l1\"/><child link=\"l2\"/><origin xyz=\"0.2 0 0\"/><axis xyz=\"0 0 1\"/></joint></robot>"
loop_closures { name: "pin" type: CONSTRAINT_TYPE_POINT link1: "l2" origin1 { xyz { x: 0.2 } } link2: "base" origin2 { xyz { x: 0.3 } } }
TEXT

# One message of every kind. A model_id naming a bundled model stands for its id (the fuzzer maps
# it). puma560 and stanford_arm: nq = nv = 6; quadruped: nq = 19 (base position and quaternion
# x, y, z, w first), nv = 18; four_bar: nq = nv = 3 with a revolute loop.
puma_q='q: [0.1, -0.5, 0.3, 0.2, -0.4, 0.6]'
puma_v='v: [0.5, 0.1, -0.2, 0.3, 0.0, -0.1]'
puma_a='a: [1, 0, -1, 0.5, 0.2, 0]'
puma_tau='tau: [1, 20, 5, 0.1, 0.2, 0.05]'
dog_q='q: [0, 0, 0.35, 0, 0, 0, 1, 0, 0.6, -1.2, 0, 0.6, -1.2, 0, 0.6, -1.2, 0, 0.6, -1.2]'
dog_v='v: [0, 0, -0.1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]'
dog_tau='tau: [0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]'
feet='contacts { frame: "FL_foot" friction: 0.8 } contacts { frame: "FR_foot" friction: 0.8 }
      contacts { frame: "HL_foot" normal: [0, 0, 1] friction: 0.8 } contacts { frame: "HR_foot" point: [0, 0, -0.01] }'
message() {  # NAME, the SessionRequest's text on standard input
  encode SessionRequest "$session/$1"
}
message inverse_dynamics <<<"model_id: \"puma560\" sequence: 1 inverse_dynamics { $puma_q $puma_v $puma_a }"
message inverse_dynamics_lagrange <<<"inverse_dynamics { model_id: \"stanford_arm\" algorithm: INVERSE_DYNAMICS_ALGORITHM_LAGRANGE_HOMOGENEOUS $puma_q $puma_v $puma_a }"
message inverse_dynamics_forces <<<"model_id: \"double_pendulum\" inverse_dynamics { batch_size: 2 q: [0.1, 0.2, 0.3, 0.4] v: [0, 0, 1, 1] a: [1, 1, 0, 0] external_forces: [0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0] }"
message forward_dynamics <<<"model_id: \"puma560\" forward_dynamics { $puma_q $puma_v $puma_tau algorithm: FORWARD_DYNAMICS_ALGORITHM_AUTO }"
message forward_dynamics_crba <<<"model_id: \"quadruped\" forward_dynamics { $dog_q $dog_v $dog_tau algorithm: FORWARD_DYNAMICS_ALGORITHM_CRBA }"
message forward_dynamics_factorization <<<"model_id: \"stanford_arm\" forward_dynamics { $puma_q $puma_v $puma_tau algorithm: FORWARD_DYNAMICS_ALGORITHM_FACTORIZATION }"
message mass_matrix_inverse <<<"model_id: \"quadruped\" mass_matrix { $dog_q inverse: true }"
message mass_matrix_lagrange <<<"model_id: \"puma560\" mass_matrix { $puma_q algorithm: MASS_MATRIX_ALGORITHM_LAGRANGE_HOMOGENEOUS inverse: true }"
message nonlinear_effects <<<"model_id: \"quadruped\" nonlinear_effects { $dog_q $dog_v }"
message gravity <<<"model_id: \"four_bar\" gravity { q: [0.3, -0.6, 0.2] }"
message kinematics <<<"model_id: \"quadruped\" kinematics { $dog_q $dog_v frames: [\"FL_foot\", \"trunk\", \"HR_knee\"] reference: REFERENCE_FRAME_WORLD jacobians: true }"
message kinematics_all_frames <<<"model_id: \"puma560\" kinematics { $puma_q reference: REFERENCE_FRAME_LOCAL }"
message hybrid_dynamics <<<"model_id: \"puma560\" hybrid_dynamics { $puma_q $puma_v inputs: [DOF_INPUT_ACCELERATION, DOF_INPUT_FORCE, DOF_INPUT_FORCE, DOF_INPUT_ACCELERATION, DOF_INPUT_FORCE, DOF_INPUT_ACCELERATION] $puma_a $puma_tau }"
message floating_base_inverse_dynamics <<<"model_id: \"quadruped\" floating_base_inverse_dynamics { $dog_q $dog_v a: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0] }"
message derivatives_inverse <<<"model_id: \"puma560\" derivatives { $puma_q $puma_v $puma_a of: DERIVATIVES_OF_INVERSE_DYNAMICS }"
message derivatives_forward <<<"model_id: \"quadruped\" derivatives { $dog_q $dog_v $dog_tau of: DERIVATIVES_OF_FORWARD_DYNAMICS }"
message coriolis_matrix <<<"model_id: \"stanford_arm\" coriolis_matrix { $puma_q $puma_v }"
message centroidal <<<"model_id: \"quadruped\" centroidal { $dog_q $dog_v }"
message constrained_dynamics <<<"model_id: \"four_bar\" constrained_dynamics { q: [0.3, -0.6, 0.2] v: [0.1, 0, 0] tau: [0, 0, 0] gains { position: 25 velocity: 10 } }"
message constrained_dynamics_inverse <<<"model_id: \"four_bar\" constrained_dynamics { mode: CONSTRAINED_DYNAMICS_MODE_INVERSE q: [0.3, -0.6, 0.2] v: [0.1, 0, 0] a: [1, 0, 0] tau: [0, 0, 0] inputs: [DOF_INPUT_ACCELERATION, DOF_INPUT_FORCE, DOF_INPUT_FORCE] }"
message constrained_dynamics_feet <<<"model_id: \"quadruped\" constrained_dynamics { $dog_q $dog_v $dog_tau constraints { type: CONSTRAINT_TYPE_POINT frame1 { frame: \"FL_foot\" } frame2 { placement { xyz { x: 0.2 y: 0.15 } } } } constraints { name: \"hind\" type: CONSTRAINT_TYPE_WELD frame1 { frame: \"HR_foot\" } frame2 { frame: \"world\" } } }"
message contact_dynamics <<<"model_id: \"quadruped\" contact_dynamics { $dog_q $dog_v $dog_tau $feet solver { max_iterations: 50 tolerance: 1e-9 } }"
message contact_dynamics_frictionless <<<"model_id: \"quadruped\" contact_dynamics { $dog_q $dog_v $dog_tau contacts { frame: \"FL_foot\" } contacts { frame: \"HR_shank\" point: [0, 0, -0.2] } }"
message impact <<<"model_id: \"quadruped\" impact { $dog_q v: [0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] $feet restitution: 0.5 }"
message simulate <<<"model_id: \"quadruped\" simulate { $dog_q $dog_v steps: 20 time_step: 0.001 ground { friction: 0.8 restitution: 0.1 } candidates { frame: \"FL_foot\" } candidates { frame: \"FR_foot\" } candidates { frame: \"HL_foot\" } candidates { frame: \"HR_foot\" point: [0, 0, 0] } contact_margin: 0.01 stabilization: 0.2 }"
message simulate_rk4 <<<"model_id: \"puma560\" simulate { $puma_q $puma_v steps: 10 integrator: INTEGRATOR_RK4 $puma_tau }"
message echo <<<"sequence: 7 echo { payload: \"ping\" values: [1, 2, 3] response_values: 6 }"

# SolveRequests: a reach of the arm with bounds and a warm start's shape, and the quadruped
# through a touchdown with every residual and activation.
protoc --proto_path=proto --encode=torqued.v1.SolveRequest torqued/v1/control.proto \
  >"$solve/reach" <<'TEXT'
model_id: "puma560" q0: [0.1, -0.5, 0.3, 0.2, -0.4, 0.6] v0: [0, 0, 0, 0, 0, 0] knots: 8 dt: 0.02
running_costs { name: "tip" residual { type: RESIDUAL_TYPE_FRAME_TRANSLATION frame: "link6" reference: [0.3, 0.2, 0.4] } }
running_costs { name: "turn" residual { type: RESIDUAL_TYPE_FRAME_ROTATION frame: "link6" placement { rpy { z: 0.3 } } } weight: 0.1 first_knot: 2 end_knot: 6 }
running_costs { name: "speed" residual { type: RESIDUAL_TYPE_FRAME_VELOCITY frame: "link4" velocity_frame: REFERENCE_FRAME_LOCAL_WORLD_ALIGNED } activation { type: ACTIVATION_TYPE_SMOOTH_1_NORM smoothing: 0.01 } weight: 0.01 }
running_costs { name: "effort" residual { type: RESIDUAL_TYPE_CONTROL_GRAVITY } weight: 0.001 }
running_costs { name: "limits" residual { type: RESIDUAL_TYPE_JOINT_LIMITS } activation { type: ACTIVATION_TYPE_QUADRATIC_BARRIER } weight: 10 }
terminal_costs { name: "pose" residual { type: RESIDUAL_TYPE_FRAME_PLACEMENT frame: "link6" placement { xyz { x: 0.3 y: 0.2 z: 0.4 } } } weight: 100 }
terminal_costs { name: "rest" residual { type: RESIDUAL_TYPE_STATE } activation { type: ACTIVATION_TYPE_WEIGHTED_QUADRATIC weights: [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1] } }
control_bounds { lower: [-50, -50, -50, -10, -10, -10] upper: [50, 50, 50, 10, 10, 10] }
solver { max_iterations: 5 } feedback: true
TEXT
protoc --proto_path=proto --encode=torqued.v1.SolveRequest torqued/v1/control.proto \
  >"$solve/touchdown" <<'TEXT'
model_id: "quadruped" q0: [0, 0, 0.35, 0, 0, 0, 1, 0, 0.6, -1.2, 0, 0.6, -1.2, 0, 0.6, -1.2, 0, 0.6, -1.2]
v0: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] knots: 10 dt: 0.02
actuation { kind: ACTUATION_KIND_UNACTUATED_ROOT } gains { position: 50 velocity: 10 }
phases { contacts { type: CONSTRAINT_TYPE_POINT frame1 { frame: "FR_foot" } } contacts { type: CONSTRAINT_TYPE_POINT frame1 { frame: "HL_foot" } } contacts { type: CONSTRAINT_TYPE_WELD frame1 { frame: "HR_foot" } } }
phases { first_knot: 5 restitution: 0.2 contacts { type: CONSTRAINT_TYPE_POINT frame1 { frame: "FL_foot" } } contacts { type: CONSTRAINT_TYPE_POINT frame1 { frame: "FR_foot" } } contacts { type: CONSTRAINT_TYPE_POINT frame1 { frame: "HL_foot" } } contacts { type: CONSTRAINT_TYPE_WELD frame1 { frame: "HR_foot" } } }
running_costs { name: "trunk" residual { type: RESIDUAL_TYPE_FRAME_TRANSLATION frame: "trunk" reference: [0.02, 0, 0.35] } weight: 10 }
running_costs { name: "com" residual { type: RESIDUAL_TYPE_CENTER_OF_MASS reference: [0.02, 0, 0.3] } }
running_costs { name: "force" residual { type: RESIDUAL_TYPE_CONTACT_FORCE frame: "FL_foot" reference: [0, 0, 20] } weight: 0.001 first_knot: 5 }
running_costs { name: "cone" residual { type: RESIDUAL_TYPE_FRICTION_CONE frame: "FR_foot" cone { friction: 0.7 faces: 6 } } activation { type: ACTIVATION_TYPE_WEIGHTED_QUADRATIC_BARRIER weights: [1, 1, 1, 1, 1, 1] lower: [0, 0, 0, 0, 0, 0] upper: [inf, inf, inf, inf, inf, inf] } }
running_costs { name: "effort" residual { type: RESIDUAL_TYPE_CONTROL } weight: 0.001 }
terminal_costs { name: "rest" residual { type: RESIDUAL_TYPE_STATE } weight: 10 }
solver { max_iterations: 4 }
TEXT

# Mpc streams: MpcRequests in text, one per argument, each written with its length as a varint
# before it (protobuf's delimited format, which mpc_request_fuzzer reads).
varint() {
  local n=$1
  while ((n >= 128)); do
    printf "\\x$(printf %02x $(((n & 127) | 128)))"
    n=$((n >> 7))
  done
  printf "\\x$(printf %02x "$n")"
}
stream() {  # OUTPUT MESSAGE...
  local output=$1 message bytes
  shift
  : >"$output"
  for message in "$@"; do
    bytes=$(mktemp)
    protoc --proto_path=proto --encode=torqued.v1.MpcRequest torqued/v1/control.proto \
      >"$bytes" <<<"$message"
    varint "$(stat -c %s "$bytes")" >>"$output"
    cat "$bytes" >>"$output"
    rm "$bytes"
  done
}
reach='model_id: "puma560" q0: [0.1, -0.5, 0.3, 0.2, -0.4, 0.6] v0: [0, 0, 0, 0, 0, 0] knots: 8 dt: 0.02
running_costs { name: "tip" residual { type: RESIDUAL_TYPE_FRAME_TRANSLATION frame: "link6" reference: [0.3, 0.2, 0.4] } }
running_costs { name: "effort" residual { type: RESIDUAL_TYPE_CONTROL_GRAVITY } weight: 0.001 }
terminal_costs { name: "rest" residual { type: RESIDUAL_TYPE_STATE } weight: 10 }
control_bounds { lower: [-50, -50, -50, -10, -10, -10] upper: [50, 50, 50, 10, 10, 10] }
solver { max_iterations: 4 }'
tick='q: [0.12, -0.49, 0.31, 0.2, -0.4, 0.6] v: [0.5, 0.2, 0.1, 0, 0, 0]'
stream "$mpc/reach_ticks" "sequence: 1 problem { $reach } plan: true" \
  "sequence: 2 $tick time: 0.02" "sequence: 3 $tick time: 0.07 iterations: 2 plan: true" \
  "sequence: 4 $tick time: 0.05" \
  "sequence: 5 $tick time: 0.1 updates { name: \"tip\" reference: [0.2, 0.3, 0.3] weight: 5 }" \
  "sequence: 6 $tick time: 0.5 problem { $reach }"
stream "$mpc/quadruped_new_schedule" \
  "sequence: 1 problem { model_id: \"quadruped\" q0: [0, 0, 0.35, 0, 0, 0, 1, 0, 0.6, -1.2, 0, 0.6, -1.2, 0, 0.6, -1.2, 0, 0.6, -1.2]
v0: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] knots: 6 dt: 0.02
actuation { kind: ACTUATION_KIND_UNACTUATED_ROOT } gains { position: 2500 velocity: 50 }
phases { contacts { type: CONSTRAINT_TYPE_POINT frame1 { frame: \"FL_foot\" } } contacts { type: CONSTRAINT_TYPE_POINT frame1 { frame: \"HR_foot\" } } }
running_costs { name: \"trunk\" residual { type: RESIDUAL_TYPE_FRAME_PLACEMENT frame: \"trunk\" placement { xyz { x: 0.02 z: 0.35 } } } weight: 10 }
running_costs { name: \"effort\" residual { type: RESIDUAL_TYPE_CONTROL } weight: 0.001 }
terminal_costs { name: \"rest\" residual { type: RESIDUAL_TYPE_STATE } weight: 10 }
solver { max_iterations: 4 } }" \
  "sequence: 2 q: [0.01, 0, 0.35, 0, 0, 0, 1, 0, 0.6, -1.2, 0, 0.6, -1.2, 0, 0.6, -1.2, 0, 0.6, -1.2] v: [0.1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] time: 0.02 updates { name: \"trunk\" weight: 100 }"
