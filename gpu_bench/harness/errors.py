"""The harness's one exception type: the evaluation cannot run (not the candidate's failure)."""


class HarnessError(Exception):
    """Category and code as in core/error.h ("invalid_input", "harness.task", ...)."""

    def __init__(self, category, code, message):
        super().__init__(message)
        self.category = category
        self.code = code
        self.message = message
