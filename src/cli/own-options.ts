// Tells whether a command line holds only a commander program's own options, so the CLI may leave its subcommands undefined.
import type { Command } from 'commander';

/**
 * True when every word of `args` (the words after the script) is one of `program`'s own options,
 * as `--name`, `--name value`, `--name=value` or `-n value`, or the value such an option takes.
 * Commander then runs the program's own action with those options whatever subcommands exist:
 * a subcommand or `help` is an operand, and operands, `--`, unknown options (`--help` among them:
 * the help option is not in `program.options`) all make this false. So do forms this does not
 * follow word by word (grouped short flags `-ab`, `-nvalue`, optional or variadic values); false is
 * always safe, since the caller then defines every subcommand as usual.
 */
export function onlyOwnOptions(program: Command, args: readonly string[]): boolean {
  const byFlag = new Map<string, { takesValue: boolean; plain: boolean }>();
  for (const option of program.options) {
    const entry = { takesValue: option.required, plain: !option.optional && !option.variadic };
    if (option.long !== undefined) byFlag.set(option.long, entry);
    if (option.short !== undefined) byFlag.set(option.short, entry);
  }
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    const equals = word.startsWith('--') ? word.indexOf('=') : -1;
    const option = byFlag.get(equals > 2 ? word.slice(0, equals) : word);
    if (option === undefined || !option.plain) return false;
    if (equals > 2) {
      if (!option.takesValue) return false;
    } else if (option.takesValue) {
      // The next word is the value, whatever it looks like (commander takes it as such).
      if (i + 1 >= args.length) return false;
      i++;
    }
  }
  return true;
}
