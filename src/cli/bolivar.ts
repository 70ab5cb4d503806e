// What other modules have always imported from the CLI, at the path they import it from: the commands'
// names (the guides' test checks docs/admin.md against them) and isLocalHost (the CLI's test). The CLI
// itself is main.ts.
export { COMMAND_NAMES } from './commands/index.ts';
export { isLocalHost } from './service.ts';
