"""One construct per concern; the stack (infra/stack.py) composes them."""
