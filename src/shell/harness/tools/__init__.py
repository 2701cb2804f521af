"""The tools, carried out in the workspace: ``dispatch`` decodes a call and runs the right one, never raising
for anything the model can cause (files, search and analyze, bash, fetch_url; paths, limits, processes)."""
