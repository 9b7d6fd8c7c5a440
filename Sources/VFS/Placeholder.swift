// VFS — under construction
