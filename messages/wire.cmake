# The protocols of issue 3 (compile, bench, trajectory, learner, cluster): their schemas, codecs and
# tests, appended to the lists messages/CMakeLists.txt builds. All tests link into messages_test.
# wire_detail.{h,cpp} holds what the codecs share (schema-id and version checks, header, error,
# reply); wire_samples.{h,cpp} builds realistic values for the tests and the fuzz test.
list(APPEND CA_MESSAGE_SCHEMAS
  compile.capnp bench.capnp trajectory.capnp learner.capnp cluster.capnp)
list(APPEND CA_MESSAGE_SOURCES
  wire_detail.cpp compile_codec.cpp bench_codec.cpp trajectory_codec.cpp learner_codec.cpp
  cluster_codec.cpp)
list(APPEND CA_MESSAGE_TESTS
  wire_samples.cpp compile_codec_test.cpp bench_codec_test.cpp trajectory_codec_test.cpp
  learner_codec_test.cpp cluster_codec_test.cpp fuzz_test.cpp)
