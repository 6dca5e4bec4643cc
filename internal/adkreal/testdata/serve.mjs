// serve.mjs runs the adk CLI whose path is its first argument with the
// rest, and exits when its stdin closes: the Go test binary that started
// it holds the other end, so the server never outlives the tests, however
// they end.
import { pathToFileURL } from 'node:url';

process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
const cli = process.argv[2];
process.argv.splice(2, 1); // the CLI reads its arguments after argv[1]
await import(pathToFileURL(cli).href);
