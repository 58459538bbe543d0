// The shell subcommands on the commander program: names, operands, help text; each takes the bridge's connection options.

import type { Command } from 'commander';
import type { ShellCommand } from './commands.js';

/** The shell subcommands, in the order help lists them. */
export const SHELL_COMMANDS = ['tools', 'call', 'resources', 'read', 'prompts', 'prompt'] as const;

/** Only `call` runs a tool, so only its exit 1 can mean a tool result with isError. */
const exitCodes = (callsTool: boolean) =>
  `\nExit codes: 0 done; 1 ${callsTool ? 'the tool reported isError or ' : ''}the server answered with an error; 2 usage (nothing was ${callsTool ? 'called' : 'sent'});\n3 the server could not be reached or answered unusably (fenbs-mcp doctor says why); 130 Ctrl-C.\n`;

const ARGUMENTS_HELP = `
Arguments: key=value (a value that parses as JSON is JSON, else a string; a property the schema
types as string keeps the text), key:=json (always JSON), --args '<json object>', or --args - (stdin).`;

/**
 * Adds tools, call, resources, read, prompts and prompt to `program`. `withConnection` adds the
 * options the bridge takes (the same definitions, so every one works here too); `run` gets the
 * parsed command and options.
 */
export function addShellCommands<Options extends { json?: boolean; args?: string }>(
  program: Command,
  withConnection: (command: Command) => Command,
  run: (command: ShellCommand, options: Options) => Promise<void>,
): void {
  const define = (name: string, description: string, examples: string[]) =>
    withConnection(program.command(name).description(description))
      .option('--json', 'print the answer as JSON for scripts')
      .addHelpText('after', `\nExamples:\n${examples.map((example) => `  ${example}`).join('\n')}\n${exitCodes(name === 'call')}`)
      .exitOverride();

  define('tools', 'list the server tools, one per line (every page); --json prints them as a JSON array', [
    'fenbs-mcp tools --demo',
    'fenbs-mcp tools --url https://example.com/mcp --json',
  ]).action((options: Options) => run({ kind: 'tools' }, options));
  define('call', 'call a tool and print its text content; --json prints the whole result as one JSON object', [
    'fenbs-mcp call tasks_get ref=T-1 --demo',
    'fenbs-mcp call tasks_import count:=5 --demo --json',
    `echo '{"ref": "T-2"}' | fenbs-mcp call tasks_get --args - --demo`,
  ])
    .argument('<tool>', 'the tool name, as `fenbs-mcp tools` lists it')
    .argument('[arguments...]', 'key=value or key:=json')
    .option('--args <json>', "the arguments as one JSON object; '-' reads it from stdin")
    .addHelpText('after', ARGUMENTS_HELP)
    .action((name: string, assignments: string[], options: Options) => run({ kind: 'call', name, assignments, args: options.args }, options));
  define('resources', 'list the server resources, one per line (every page); --json prints them as a JSON array', ['fenbs-mcp resources --demo']).action(
    (options: Options) => run({ kind: 'resources' }, options),
  );
  define('read', 'read a resource and print its text; --json prints the whole result', ['fenbs-mcp read demo://board --demo'])
    .argument('<uri>', 'the resource URI, as `fenbs-mcp resources` lists it')
    .action((uri: string, options: Options) => run({ kind: 'read', uri }, options));
  define('prompts', 'list the server prompts, one per line (every page); --json prints them as a JSON array', ['fenbs-mcp prompts --demo']).action(
    (options: Options) => run({ kind: 'prompts' }, options),
  );
  define('prompt', 'get a prompt and print its messages; --json prints the whole result', ['fenbs-mcp prompt plan_task ref=T-1 --demo'])
    .argument('<name>', 'the prompt name, as `fenbs-mcp prompts` lists it')
    .argument('[arguments...]', 'key=value (prompt arguments are strings)')
    .option('--args <json>', "the arguments as one JSON object; '-' reads it from stdin")
    .action((name: string, assignments: string[], options: Options) => run({ kind: 'prompt', name, assignments, args: options.args }, options));
}
