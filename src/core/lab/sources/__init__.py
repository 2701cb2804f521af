"""Results read from elsewhere than a report directory: an ``eval export`` bundle read back, Inspect AI logs and
Harbor jobs as the lab's runs and conditions."""
