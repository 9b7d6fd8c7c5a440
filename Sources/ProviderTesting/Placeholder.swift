// ProviderTesting — under construction
