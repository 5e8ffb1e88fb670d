// The translation unit of ca_torch_pch (cmake/Dependencies.cmake): CMake builds the precompiled
// <torch/torch.h> beside it, and the torch-linked targets reuse that header (ca_use_torch_pch).
