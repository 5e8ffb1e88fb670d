# The run store's value schema and codec (storage/run_store.h, docs/formats/store.md).
list(APPEND CA_MESSAGE_SCHEMAS store.capnp)
list(APPEND CA_MESSAGE_SOURCES store_codec.cpp store_value.cpp)
list(APPEND CA_MESSAGE_TESTS store_codec_test.cpp)
