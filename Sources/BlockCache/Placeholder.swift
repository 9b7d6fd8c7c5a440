// BlockCache — under construction
