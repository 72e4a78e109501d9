# The libFuzzer harnesses, fuzz/fuzz_<name>.cpp, each with its seed corpus in
# fuzz/corpus/<name>/: built by fuzz/CMakeLists.txt, smoke-run by
# tests/CMakeLists.txt (ctest fuzz_smoke_<name>).
set(ARBITER_FUZZERS http_request upstream_response request_body sse_resume engine_metrics config_yaml cache)
