"""Post-processing of each Sapiens2 head, on the model's device."""
