// LocalProvider — under construction
