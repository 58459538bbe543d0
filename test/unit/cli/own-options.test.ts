// Tests of src/cli/own-options.ts: which command lines hold only a program's own options.
import { Command, Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { onlyOwnOptions } from '../../../src/cli/own-options.js';

/** A program with options of each kind the CLI's own program has, and one subcommand. */
function program(): Command {
  const command = new Command('tool')
    .version('1.0.0', '-v, --version')
    .option('--url <url>', 'endpoint')
    .option('-H, --header <header>', 'repeatable', (value: string, previous: string[] = []) => [...previous, value])
    .option('--allow-http', 'a flag')
    .option('-q', 'a short flag alone')
    .addOption(new Option('--log-level <level>', 'level'));
  command.command('doctor');
  return command;
}

/** What commander itself makes of `args`: with no operand and no unknown word, the program's own action runs. */
function commanderSeesOnlyOptions(args: string[]): boolean {
  const { operands, unknown } = program().parseOptions(args);
  return operands.length === 0 && unknown.length === 0;
}

describe('onlyOwnOptions', () => {
  it('is true for no words and for own options in every plain form, values included', () => {
    expect(onlyOwnOptions(program(), [])).toBe(true);
    expect(onlyOwnOptions(program(), ['--url', 'http://x/mcp', '--allow-http', '-H', 'A: b', '--header=C: d', '--log-level', 'warn'])).toBe(true);
    expect(onlyOwnOptions(program(), ['-v', '-q'])).toBe(true);
    expect(commanderSeesOnlyOptions(['--url', 'http://x/mcp', '--allow-http', '-H', 'A: b', '--header=C: d', '--log-level', 'warn'])).toBe(true);
  });

  it('takes the word after an option that needs a value as its value, whatever it looks like', () => {
    expect(onlyOwnOptions(program(), ['--url', '--allow-http'])).toBe(true);
    expect(onlyOwnOptions(program(), ['-H', 'doctor'])).toBe(true);
    expect(commanderSeesOnlyOptions(['--url', '--allow-http'])).toBe(true);
    expect(commanderSeesOnlyOptions(['-H', 'doctor'])).toBe(true);
  });

  it('is false when a subcommand, help or any other operand could be reached', () => {
    expect(onlyOwnOptions(program(), ['doctor'])).toBe(false);
    expect(onlyOwnOptions(program(), ['--url', 'http://x/mcp', 'doctor'])).toBe(false);
    expect(onlyOwnOptions(program(), ['help'])).toBe(false);
    expect(onlyOwnOptions(program(), ['doctr'])).toBe(false);
    expect(onlyOwnOptions(program(), ['-'])).toBe(false);
    expect(onlyOwnOptions(program(), ['--', '--url'])).toBe(false);
    expect(commanderSeesOnlyOptions(['--url', 'http://x/mcp', 'doctor'])).toBe(false);
  });

  it('is false for options that are not the program own, --help and -h among them', () => {
    expect(onlyOwnOptions(program(), ['--help'])).toBe(false);
    expect(onlyOwnOptions(program(), ['-h'])).toBe(false);
    expect(onlyOwnOptions(program(), ['--token', 'secret'])).toBe(false);
    expect(onlyOwnOptions(program(), ['-5'])).toBe(false);
  });

  it('is false for forms it does not follow word by word, so commander decides with every subcommand defined', () => {
    // A value missing at the end, a value given to a flag, grouped or joined short options.
    expect(onlyOwnOptions(program(), ['--url'])).toBe(false);
    expect(onlyOwnOptions(program(), ['--allow-http=yes'])).toBe(false);
    expect(onlyOwnOptions(program(), ['-HA: b'])).toBe(false);
    expect(onlyOwnOptions(program(), ['-vH', 'A: b'])).toBe(false);
  });

  it('is false when an option with an optional or variadic value is used, and true when it is only defined', () => {
    const withOptional = program().option('--color [when]', 'optional value').option('--tag <tags...>', 'variadic');
    expect(onlyOwnOptions(withOptional, ['--color'])).toBe(false);
    expect(onlyOwnOptions(withOptional, ['--tag', 'a', 'b'])).toBe(false);
    expect(onlyOwnOptions(withOptional, ['--url', 'http://x/mcp'])).toBe(true);
  });
});
