// The commander program: every command and option, the help text and its examples, and usage mistakes said plainly.

import { Command, Help, Option, type CommanderError } from 'commander';
import { DEFAULT_URL, type RawOptions } from '../config/config.js';
import { toTerminalLine } from '../core/terminal-text.js';
import { EXIT } from './exit-codes.js';
import { onlyOwnOptions } from './own-options.js';
import { addShellCommands, SHELL_COMMANDS } from '../shell/command-line.js';
import type { ShellCommand } from '../shell/commands.js';
import { nearestWord } from '../core/nearest-word.js';

export interface CliOptions extends RawOptions {
  demo?: boolean;
  json?: boolean;
  args?: string;
}

/** The subcommands, for suggestions when a word on the command line is none of them. */
const COMMANDS = ['doctor', 'login', 'logout', 'help', ...SHELL_COMMANDS] as const;

/** login and logout, as `help` and `help login` list them. */
const ACCOUNT_EXIT_CODES = '0 done; 1 the sign-in failed or the server offers none; 2 usage; 3 the server could not be reached; 130 Ctrl-C';

const EXAMPLES = `
Examples:
  # In a desktop client's config (Claude Desktop, Cursor, VS Code…), after
  # npm install -g ./fenbs-mcp-<version>.tgz (the README says how): the token stays in "env"
  {
    "mcpServers": {
      "fenbs": { "command": "fenbs-mcp", "args": [], "env": { "FENBS_TOKEN": "<your token>" } }
    }
  }

  # Without writing JSON-RPC: list the tools, call one with key=value arguments (--json for scripts)
  fenbs-mcp tools --demo
  fenbs-mcp call tasks_get ref=T-1 --demo

  # In a shell pipeline
  printf '%s\\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \\
    | FENBS_TOKEN=... fenbs-mcp

  # Another server, an extra header, a longer deadline
  fenbs-mcp --url https://example.com/mcp -H "X-Team: platform" --request-timeout 3600000

  # A token a command prints (run again after a 401), or a header secret kept in the environment
  fenbs-mcp --url https://example.com/mcp --token-command 'op read op://Private/example/token'
  EXAMPLE_KEY=... fenbs-mcp --url https://example.com/mcp -H 'X-Api-Key: \${EXAMPLE_KEY}'

  # See it work with no account: an embedded demo server and the sample session the package ships
  fenbs-mcp --demo < "$(npm root -g)/fenbs-mcp/examples/session.jsonl"

Exit codes:
  the bridge        0 stdin ended, SIGTERM or SIGHUP, or stdout closed; 1 stdin failed; 2 usage; 130 Ctrl-C
  doctor            0 the bridge can work; 2 usage; 3 a check failed
  login, logout     ${ACCOUNT_EXIT_CODES}
  tools, call, …    0 done; 1 isError or a JSON-RPC error; 2 usage (nothing was called); 3 unreachable; 130 Ctrl-C

Environment:
  FENBS_TOKEN            bearer token (or the variable named by --token-env); comes before
                         --token-file, --token-command and -H 'Authorization: Bearer \${VAR}'
  FENBS_MCP_URL          endpoint when --url is not given (default ${DEFAULT_URL})
  FENBS_MCP_LOG_LEVEL    log level when --log-level is not given
  HTTPS_PROXY, HTTP_PROXY, NO_PROXY   proxy settings (either case), honoured by default
  NODE_EXTRA_CA_CERTS    extra trusted CAs (PEM file); see also --ca-file
  FENBS_MCP_CLIENT_KEY_PASSPHRASE  passphrase of an encrypted --client-key
`;

/** Gathers a repeatable option's values in order. */
const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** The options that say where and how to connect; shared by the bridge and `doctor`. */
function addConnectionOptions(command: Command): Command {
  return command
    .option('--url <url>', `MCP endpoint (env FENBS_MCP_URL, default ${DEFAULT_URL})`)
    .option('--token-env <name>', 'environment variable that holds the bearer token', 'FENBS_TOKEN')
    .option('--token-file <path>', 'read the bearer token from this file instead')
    .option('--token-command <cmd>', 'run this shell command for the bearer token (its trimmed stdout); run again after a 401')
    .option(
      '-H, --header <header>',
      'extra request header "Name: value" (repeatable); ${VAR} takes a value from the environment',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--request-timeout <ms>', 'deadline per request in ms, 0 = none (default 1800000 = 30 min; 120000 for shell commands)')
    .option('--connect-timeout <ms>', 'TCP/TLS connect timeout in ms (default 10000)')
    .option('--stream-idle-timeout <ms>', 'give up an event stream silent this long, in ms, 0 = never (default 0)')
    .option(
      '--keep-alive <ms>',
      'ping a 2025-era session idle this long, in ms (at least 1000), so a server that reaps idle sessions keeps it; 0 = off (default 0)',
    )
    .option('--max-line-bytes <n>', 'largest stdin line accepted, in bytes (default 67108864 = 64 MiB)')
    .option('--max-message-bytes <n>', 'largest reply message accepted, in bytes (default 67108864 = 64 MiB)')
    .option('--ca-file <pem>', 'also trust the CA certificates in this PEM file (added to the store in use)')
    .option('--use-system-ca', "also trust the operating system's CA store (Node 22.15+, 23.10+ or 24+)")
    .option('--client-cert <pem>', 'TLS client certificate (a chain is sent whole) for servers that ask for one; needs --client-key')
    .option('--client-key <pem>', 'private key of --client-cert (passphrase of an encrypted key in env FENBS_MCP_CLIENT_KEY_PASSPHRASE)')
    .option('--allow-http', 'allow sending the token over plain http:// to a non-loopback host')
    .option('--oauth-client-id <id>', 'OAuth: a client id registered with the authorization server (secret in env FENBS_MCP_OAUTH_CLIENT_SECRET)')
    .option('--oauth-client-secret-file <path>', 'OAuth: read the client secret from this file')
    .option('--oauth-device-code', 'OAuth: sign in with a code shown on stderr, on any device (RFC 8628 device grant; no browser here)')
    .option('--oauth-client-credentials', 'OAuth: machine to machine, no person: the client credentials grant (needs --oauth-client-id and its secret)')
    .option('--oauth-issuer <url>', 'OAuth: use only this authorization server; refuse any other the server names (env FENBS_MCP_OAUTH_ISSUER)')
    .option('--oauth-client-metadata-url <url>', 'OAuth: an https URL of a Client ID Metadata Document, used as client id where supported')
    .option('--oauth-callback-port <port>', 'OAuth: loopback port for the sign-in callback (default: a free port)')
    .option('--oauth-login-timeout <ms>', 'OAuth: how long a sign-in in the browser may take, in ms (default 300000 = 5 min)')
    .option(
      '--oauth-scope <scopes>',
      "OAuth: the scopes to request instead of the server's, space-separated (default: the server's, plus offline_access when the authorization server lists it)",
    )
    .option('--oauth-resource <uri>', "OAuth: the RFC 8707 resource to send instead of the server's URL (Entra ID: the API's App ID URI)")
    .option('--oauth-no-resource', 'OAuth: send no RFC 8707 resource parameter (for authorization servers that refuse it)')
    .option(
      '--oauth-authorize-param <name=value>',
      'OAuth: an extra parameter of the authorization request, the device authorization request or the client credentials token request (repeatable): audience=…, prompt=consent, access_type=offline',
      collect,
    )
    .option('--oauth-client-key <pem>', 'OAuth: authenticate the client with this private key (private_key_jwt, RFC 7523) instead of a secret')
    .option(
      '--oauth-allow-private-network',
      'OAuth: let the server name an authorization server on a private, loopback or link-local address when the MCP server is not on one (never a cloud metadata address)',
    )
    .option(
      '--token-store <where>',
      'OAuth: where tokens and client secrets are kept: auto (the OS credential store when reachable, else private files), keychain (only the OS store) or file (env FENBS_MCP_TOKEN_STORE, default auto)',
    )
    .addOption(new Option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (env FENBS_MCP_LOG_LEVEL, default info)'))
    .option('--log-format <format>', 'json or pretty: how stderr shows the logs (default: pretty on a terminal, json otherwise)')
    .option('--log-file <path>', 'also append the logs to this file (always JSON)')
    .option('--protocol <mode>', 'auto: translate a 2025-era client for a 2026-07-28-only server; passthrough: never translate (default auto)')
    .option(
      '--transport <mode>',
      'auto: Streamable HTTP, falling back to the older HTTP+SSE (2024-11-05) when the URL refuses the first POST; streamable-http or sse: only that one (default auto)',
    )
    .option('--allow-tools <patterns>', 'show only tools whose names match these comma-separated globs (* and ?; repeatable)', collect)
    .option('--deny-tools <patterns>', 'hide tools whose names match these comma-separated globs (* and ?; repeatable); wins over --allow-tools', collect)
    .option('--no-merge-pages', "answer tools/list and prompts/list with the server's first page only, instead of every page merged")
    .option('--demo', 'use an embedded demo MCP server (a small task board) instead of --url');
}

/**
 * The program; `args` (the words after the script) decide whether its subcommands are defined: a
 * command line of the bridge's own options only cannot reach one, and defining them (each with every
 * connection option) is most of the work of building the program on a desktop host's every start.
 */
export function buildProgram(
  version: string,
  args: readonly string[],
  actions: {
    bridge: (options: CliOptions) => Promise<number>;
    doctor: (options: CliOptions) => Promise<number>;
    shell: (command: ShellCommand, options: CliOptions) => Promise<number>;
    account: (command: 'login' | 'logout', options: CliOptions) => Promise<number>;
  },
): { program: Command; result: () => number } {
  let exitCode: number = EXIT.OK;
  const program = addConnectionOptions(
    new Command('fenbs-mcp')
      .description('Bridges an MCP client on stdio to a Streamable HTTP MCP server: one JSON-RPC message per line in, one per line out.')
      .version(version, '-v, --version'),
  )
    .addHelpText('after', EXAMPLES)
    // `fenbs-mcp help` and `fenbs-mcp help doctor` work as in other tools.
    .helpCommand(true)
    // Options after `doctor` belong to doctor, not to the bridge.
    .enablePositionalOptions()
    .showSuggestionAfterError(true)
    .exitOverride()
    .action(async (options: CliOptions) => {
      exitCode = await actions.bridge(options);
    });
  const output = {
    writeOut: (text: string) => process.stdout.write(text),
    writeErr: (text: string) => process.stderr.write(text),
    outputError: () => undefined, // reported once, by usage()
  };
  program.configureOutput(output);
  if (onlyOwnOptions(program, args)) return { program, result: () => exitCode };
  addConnectionOptions(program.command('doctor').description('check the URL, network, TLS, token and protocol, one line per check with a hint on failure'))
    .option('--json', 'print the report as one JSON object')
    .addHelpText(
      'after',
      '\nExamples:\n  fenbs-mcp doctor\n  fenbs-mcp doctor --url https://example.com/mcp --json\n  fenbs-mcp doctor --demo\n\nExit code 0 when the bridge can work, 3 when a check failed, 2 for usage errors.\n',
    )
    .exitOverride()
    .action(async (options: CliOptions) => {
      exitCode = await actions.doctor(options);
    });
  addShellCommands(program, addConnectionOptions, async (command, options) => {
    exitCode = await actions.shell(command, options);
  });
  for (const command of ['login', 'logout'] as const) {
    addConnectionOptions(
      program
        .command(command)
        .description(
          command === 'login'
            ? 'sign in to the server with OAuth ahead of time (opens a browser), then exit'
            : "forget the server's OAuth tokens and client registration",
        ),
    )
      .addHelpText('after', `\nExamples:\n  fenbs-mcp ${command} --url https://example.com/mcp\n\nExit codes: ${ACCOUNT_EXIT_CODES}.\n`)
      .exitOverride()
      .action(async (options: CliOptions) => {
        exitCode = await actions.account(command, options);
      });
  }
  for (const command of program.commands) command.configureOutput(output);
  showConnectionOptionsOnce(program);
  return { program, result: () => exitCode };
}

/** What a command's help keeps of the connection options: the two a first try needs; the rest are the bridge's, listed once. */
const OPTIONS_SHOWN_IN_COMMAND_HELP = new Set(['--url', '--demo']);

/**
 * `help <command>` shows the command's own options and the two a first try needs, then one line
 * pointing at `fenbs-mcp --help` for the rest, instead of the ~25 connection options (some 50
 * lines) every command repeats. The options themselves still all work on every command.
 */
function showConnectionOptionsOnce(program: Command): void {
  const shared = new Set(program.options.map((option) => option.long));
  const standard = new Help();
  for (const command of program.commands) {
    if (command.name() === 'help') continue;
    command.configureHelp({
      visibleOptions: (cmd) =>
        standard.visibleOptions(cmd).filter((option) => !shared.has(option.long) || OPTIONS_SHOWN_IN_COMMAND_HELP.has(option.long ?? '')),
    });
    command.addHelpText(
      'after',
      '\nConnection options: every option of the bridge works here too (--token-file, --token-command,\n-H, timeouts, --ca-file, OAuth, logging, --allow-tools…): fenbs-mcp --help lists them.',
    );
  }
}

/** Turns commander's complaint into a usage message that says what to do instead, said through `report` (usage() unless a command reports otherwise). */
export function commandLineMistake(error: CommanderError, operands: readonly string[], report: (message: string, fix?: string) => number = usage): number {
  if (error.code === 'commander.excessArguments') {
    const [first = ''] = operands;
    // A command given a word it takes none for (`doctor --demo extra`): the word (most often the last) is the mistake, not the command.
    const extra = operands
      .slice(1)
      .filter((word) => !word.startsWith('-'))
      .at(-1);
    if ((['doctor', 'login', 'logout'] as readonly string[]).includes(first) && extra !== undefined)
      return report(`${first} takes no arguments, only options, but was given "${extra}"`, `fenbs-mcp help ${first}`);
    const word = first;
    const near = nearestCommand(word);
    return report(
      `unknown command "${word}"${near === undefined ? '' : ` (did you mean ${near}?)`}; the bridge itself takes no arguments, only options`,
      near === undefined ? 'fenbs-mcp help' : `fenbs-mcp ${near}`,
    );
  }
  if (error.code === 'commander.unknownOption' && /'--token(=.*)?'/.test(error.message)) {
    // Never echo the value: it is the secret a command line must not carry.
    return report(
      '--token is not an option: a token on the command line shows up in process lists and shell history',
      'put it in the environment: FENBS_TOKEN=<token> fenbs-mcp (in a desktop config, the "env" block), or use --token-file <path>',
    );
  }
  if (error.code === 'commander.unknownOption' && /'--oauth-client-secret(=.*)?'/.test(error.message)) {
    return report(
      '--oauth-client-secret is not an option: a client secret on the command line shows up in process lists and shell history',
      'put it in the environment: FENBS_MCP_OAUTH_CLIENT_SECRET=<secret> fenbs-mcp (in a desktop config, the "env" block), or use --oauth-client-secret-file <path>',
    );
  }
  // Commander puts its suggestion on a line of its own: one line here, never a visible \x0a.
  return report(
    error.message
      .replace(/^error: /, '')
      .replace(/\s*\n\s*/g, ' ')
      .trim(),
  );
}

/**
 * `fenbs-mcp help <word>` for a word that is no command: one usage line with a suggestion, instead
 * of commander printing the whole help and then its internal "(outputHelp)". Undefined otherwise.
 */
export function helpTopicMistake(args: readonly string[]): number | undefined {
  const [first, topic] = args;
  if (first !== 'help' || topic === undefined || topic.startsWith('-') || (COMMANDS as readonly string[]).includes(topic)) return undefined;
  const near = nearestCommand(topic);
  return usage(
    `there is no command "${topic}" to show help for${near === undefined ? '' : ` (did you mean ${near}?)`}`,
    near === undefined ? 'fenbs-mcp help' : `fenbs-mcp help ${near}`,
  );
}

/** The command a mistyped word is most likely meant to be: one within two edits, if any. */
function nearestCommand(word: string): string | undefined {
  return nearestWord(word, COMMANDS, 2);
}

export function usage(message: string, fix?: string): number {
  // The words of the command line and the files it names are quoted back: shown, never obeyed.
  process.stderr.write(
    `fenbs-mcp: ${toTerminalLine(message)}\n${fix === undefined ? '' : `  try: ${toTerminalLine(fix)}\n`}  (fenbs-mcp --help shows every option)\n`,
  );
  return EXIT.USAGE;
}
