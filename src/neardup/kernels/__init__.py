"""The compiled kernels (numba, cached): the bottom layer — they import only NumPy, numba and each
other, and turn a whole batch into signatures, candidates or similarities."""
