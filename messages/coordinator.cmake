# The coordinator's protocol (issue 24): rollout workers, the learner and status clients reach the
# coordinator through their process's gateway (messages/coordinator_protocol.h).
list(APPEND CA_MESSAGE_SCHEMAS coordinator.capnp)
list(APPEND CA_MESSAGE_SOURCES coordinator_codec.cpp)
list(APPEND CA_MESSAGE_TESTS coordinator_codec_test.cpp)
