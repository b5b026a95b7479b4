#!/usr/bin/env bash
# The test command: installs what is missing, then runs each stage, stopping at the first that
# fails (the command then fails):
#   release     GCC Release build, portable (x86-64 baseline), every test    build/test
#   asan        clang-14 ASan + UBSan build for this machine's CPU (-march=native: AVX2 and FMA
#               where the CPU has them), with the fuzzers, every test         build/asan
#   tsan        clang-14 TSan build, the server, Session and client tests    build/tsan
#   fuzz        every libFuzzer target of build/asan on its seeds, 10 s each  build/asan
#   containers  the image, the compose stack and the Kubernetes manifests, built and run, the
#               image's results compared with build/test's (tests/deploy/run.sh)
#   native      (not by default) GCC Release for this machine's CPU, every test  build/test-native
# The ASan stage is the native one, so that a second ISA level is built and tested (model ids must
# match the portable build's, results agree within bounds that hold with FMA) without a third full
# build: a GCC native stage costs another ~13 minutes of CI's 60 on two cores.
# The sanitizer builds use clang-14: it compiles them in a third of GCC 12's time, and it is the
# compiler libFuzzer needs anyway. TORQUED_TEST_STAGES picks stages (default "release asan
# tsan fuzz containers"; TORQUED_SKIP_CONTAINERS=1 skips the containers). Arguments go to every
# stage's ctest (e.g. -R Session). Sanitizer reports of any process, the servers the tests start
# included, are collected in <build>/sanitizer-reports/ and fail their stage.
# Every skipped test (GoogleTest's GTEST_SKIP, pytest's skips) is listed at the end, with its
# reason. The tests that read ../shared skip without it (a user's clone); CI runs with it beside
# the clone and sets CI=true: there, or wherever ../shared exists, such a skip fails its stage
# (tests/skipped_tests.py), as does TORQUED_SKIP_CONTAINERS=1 with CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh --test
source_dir=$PWD
jobs=$(nproc)
stages=${TORQUED_TEST_STAGES:-release asan tsan fuzz containers}
passed=0
skipped=$(mktemp)
stage_output=$(mktemp)
running=""

heading() {
  echo
  echo "=================== $1 ==================="
}

# Compiled objects are cached (ccache, installed by install-deps.sh) under paths relative to the
# clone, so that a second clone, or a second run, rebuilds only what changed. The tests' precompiled
# headers are cached too when ccache may ignore their definitions and timestamps (its manual,
# "Precompiled headers").
export CCACHE_BASEDIR=$source_dir
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
configure() {  # BUILD_DIR, CMake options...
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "$@"
}

# Prints the skipped tests of the stages that ran, at the end of the command however it ends, then,
# when a stage failed, its name and the last lines it printed: the end of the output is what a CI
# log shows first.
print_summary() {
  local status=$?
  echo
  if [[ -s $skipped ]]; then
    echo "=================== Skipped tests: $(wc -l <"$skipped") ==================="
    cat "$skipped"
  else
    echo "Skipped tests: none"
  fi
  if ((status != 0)) && [[ -n $running ]]; then
    echo
    echo "=================== $running FAILED (exit $status); its last 40 lines ==================="
    tail -n 40 "$stage_output"
  fi
  rm -f "$skipped" "$stage_output"
}
trap print_summary EXIT

# Runs ctest in BUILD_DIR, then adds the tests it skipped to the list printed at the end. Fails
# when ctest fails, or when a skip hides a check of ../shared that must run here. CTest keeps the
# whole output of the tests that pass, where GoogleTest and pytest print their skips.
run_ctest() {  # BUILD_DIR, ctest arguments...
  local dir=$1
  shift
  local junit=$source_dir/$dir/ctest-junit.xml
  local status=0
  rm -f "$junit"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" --output-junit "$junit" \
    --test-output-size-passed 100000000 "$@" || status=$?
  /usr/bin/python3 tests/skipped_tests.py "$stage" "$source_dir/../shared" "$skipped" "$junit" ||
    status=1
  return "$status"
}

# Runs ctest in BUILD_DIR with sanitizer reports going to files, then fails when there are any.
# The servers the tests start are killed at the end of each test, so their reports would be lost
# on a pipe: log_path makes every process write its own file. gRPC, protobuf and Abseil are
# uninstrumented: ThreadSanitizer ignores their calls through its interceptors (malloc, memcpy,
# epoll, ...: ignore_noninstrumented_modules), and tests/tsan.supp the rest of their internals.
ctest_with_reports() {  # BUILD_DIR, ctest arguments...
  local dir=$1
  shift
  local reports=$source_dir/$dir/sanitizer-reports
  rm -rf "$reports"
  mkdir -p "$reports"
  local status=0
  ASAN_OPTIONS="log_path=$reports/report:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:detect_leaks=1" \
    UBSAN_OPTIONS="log_path=$reports/report:print_stacktrace=1:halt_on_error=1" \
    TSAN_OPTIONS="log_path=$reports/report:halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:symbolize_inline_frames=0:suppressions=$source_dir/tests/tsan.supp" \
    run_ctest "$dir" "$@" || status=$?
  if compgen -G "$reports/*" >/dev/null; then
    echo "Sanitizer reports ($reports):"
    cat "$reports"/*
    return 1
  fi
  return "$status"
}

run_release() {
  configure build/test
  cmake --build build/test -j"$jobs"
  run_ctest build/test "$@"
}

# The suite built for this machine's CPU (AVX2, FMA and wider registers where it has them), where
# floating-point contraction and Eigen's alignment differ from the portable build while results
# must agree and model ids must not change (tests/server/model_id_test.cpp pins the portable
# build's).
run_native() {
  echo "CPU: $(grep -qw avx2 /proc/cpuinfo && echo AVX2 || echo "no AVX2")"
  configure build/test-native -DTORQUED_NATIVE=ON -DTORQUED_BUILD_BENCH=OFF
  cmake --build build/test-native -j"$jobs"
  run_ctest build/test-native "$@"
}

sanitizer_build() {  # BUILD_DIR, SANITIZER, CMake options...
  local dir=$1 sanitizer=$2
  shift 2
  configure "$dir" -DCMAKE_CXX_COMPILER=clang++-14 -DTORQUED_SANITIZE="$sanitizer" "$@"
}

run_asan() {
  echo "CPU: $(grep -qw avx2 /proc/cpuinfo && echo AVX2 || echo "no AVX2")"
  sanitizer_build build/asan address -DTORQUED_FUZZ=ON -DTORQUED_NATIVE=ON
  cmake --build build/asan -j"$jobs"
  ctest_with_reports build/asan "$@"
}

# The code with threads: the server (executor, workspace pool, Session reactor) and the clients
# that call it concurrently. The engine has no threads of its own.
run_tsan() {
  sanitizer_build build/tsan thread
  cmake --build build/tsan -j"$jobs" --target server_tests
  ctest_with_reports build/tsan -L server "$@"
}

run_fuzz() {
  sanitizer_build build/asan address -DTORQUED_FUZZ=ON -DTORQUED_NATIVE=ON
  cmake --build build/asan -j"$jobs" --target fuzzers
  bash tests/fuzz/run.sh build/asan 10
}

run_containers() {
  if [[ "${TORQUED_SKIP_CONTAINERS:-0}" == 1 ]]; then
    echo "containers  the whole stage: TORQUED_SKIP_CONTAINERS=1" >>"$skipped"
    if [[ "${CI:-}" == true ]]; then
      echo "TORQUED_SKIP_CONTAINERS=1 with CI=true: CI runs the containers stage" >&2
      return 1
    fi
  fi
  local log status=0
  log=$(mktemp)
  bash tests/deploy/run.sh build/test 2>&1 | tee "$log" || status=$?
  /usr/bin/python3 tests/skipped_tests.py containers "$source_dir/../shared" "$skipped" "$log" ||
    status=1
  rm -f "$log"
  return "$status"
}

for stage in $stages; do
  case $stage in
    release) title="Release build: every test" ;;
    native) title="Native build (-march=native): every test" ;;
    asan) title="ASan + UBSan build (clang-14): every test" ;;
    tsan) title="TSan build (clang-14): server, Session and client tests" ;;
    fuzz) title="Fuzzing: every libFuzzer target, 10 s each" ;;
    containers) title="Containers: the image, the compose stack, the Kubernetes manifests" ;;
    *)
      echo "unknown stage $stage (release, native, asan, tsan, fuzz, containers)" >&2
      exit 2
      ;;
  esac
  heading "$title"
  start=$SECONDS
  running=$stage
  "run_$stage" "$@" 2>&1 | tee "$stage_output"
  running=""
  echo "--- $stage passed in $((SECONDS - start)) s"
  passed=$((passed + 1))
done
echo
echo "stages: $passed passed, 0 failed"
