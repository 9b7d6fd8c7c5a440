// MetadataStore — under construction
