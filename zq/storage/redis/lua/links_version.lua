#!lua flags=no-writes
-- ARGV: project. Returns the project's links version.
return links_version(ARGV[3])
