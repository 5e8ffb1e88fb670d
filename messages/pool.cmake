# Work-pool envelopes (broker, workers, clients in actors/); docs/formats/pool.md.
list(APPEND CA_MESSAGE_SCHEMAS pool.capnp)
list(APPEND CA_MESSAGE_SOURCES pool_codec.cpp)
list(APPEND CA_MESSAGE_TESTS pool_codec_test.cpp)
