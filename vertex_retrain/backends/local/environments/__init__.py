"""What local jobs and servers run: built wheels and image records (the builder and its index), and
each package's isolated, cached virtual environment holding exactly its requirements' closure."""
