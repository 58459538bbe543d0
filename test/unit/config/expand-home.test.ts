import { describe, expect, it } from 'vitest';
import { expandHome, PATH_OPTIONS, withHomeExpanded } from '../../../src/config/option-files.js';

describe('expandHome', () => {
  it('turns a leading ~ or ~/ into the home folder, as a shell would', () => {
    expect(expandHome('~/fenbs-mcp.log', { HOME: '/home/ada' })).toBe('/home/ada/fenbs-mcp.log');
    expect(expandHome('~', { HOME: '/home/ada/' })).toBe('/home/ada/');
    expect(expandHome('~/tok.txt', { HOME: '/home/ada/' })).toBe('/home/ada/tok.txt');
    expect(expandHome('~\\tok.txt', { USERPROFILE: 'C:\\Users\\ada' })).toBe('C:\\Users\\ada\\tok.txt');
  });

  it('leaves ~user/, a ~ inside a path, a relative or absolute path, and a path with no home, as they are', () => {
    for (const path of ['~ada/tok.txt', 'logs/~/x.log', './tok.txt', '/tmp/~x', '~x']) expect(expandHome(path, { HOME: '/home/ada' })).toBe(path);
    expect(expandHome('~/tok.txt', {})).toBe('~/tok.txt');
  });

  it('expands every path option, and no other', () => {
    const options = Object.fromEntries([...PATH_OPTIONS.map((name) => [name, `~/${name}`]), ['url', '~/not-a-path']]);
    const expanded = withHomeExpanded(options, { HOME: '/h' }) as Record<string, string>;
    for (const name of PATH_OPTIONS) expect(expanded[name]).toBe(`/h/${name}`);
    expect(expanded.url).toBe('~/not-a-path');
  });
});
