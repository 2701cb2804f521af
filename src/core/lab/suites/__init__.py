"""The suite model: suite.json parsed and validated, its paths, the run plan, the starter suite and the importers' mappings."""
