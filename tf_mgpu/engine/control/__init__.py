"""Between compiled calls: the controller's epochs and the ordered actions it runs."""
