-- Read by dot-commands.case with .read.
SELECT 'from the included file' AS said;
SELECT nope;
