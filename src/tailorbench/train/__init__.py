"""Bradley-Terry reward-model training (`tailor train-rm`): config, data preparation, training loop."""
