import { execFileSync } from 'node:child_process';
import { constants, existsSync, mkdtempSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger, LogFileError, MAX_LOG_BUFFER_BYTES } from '../../../src/logging/logger.js';
import { createRedactor } from '../../../src/logging/redactor.js';
import { toLoggedId } from '../../../src/core/json-rpc.js';

const redact = createRedactor(['logger-secret-123']);
const tempFile = (name: string) => join(mkdtempSync(join(tmpdir(), 'fenbs-logger-')), name);

describe('createLogger', () => {
  it('masks a secret in a long id before cutting it, so no piece of one lying across the cut is logged', async () => {
    const secret = 'id-secret-Qw3rTy-9876543210-abcdef';
    const stderrFile = tempFile('stderr.log');
    const { logger, close } = createLogger({ level: 'info', redact: createRedactor([secret]), stderrFd: openSync(stderrFile, 'a') });
    // The secret starts 50 characters in: a cut at 64 would keep its first 14 characters.
    const id = `${'x'.repeat(50)}${secret}${'y'.repeat(1 << 20)}`;
    logger.warn({ id: toLoggedId(id) }, 'the server sent a response for no outstanding request; dropped');
    await close();
    const line = JSON.parse(readFileSync(stderrFile, 'utf8').trim()) as { id: string };
    expect(line.id).toBe(`${'x'.repeat(50)}[REDACTED]yyyy… (${id.length} characters)`);
    for (let i = 0; i + 12 <= secret.length; i++) expect(line.id).not.toContain(secret.slice(i, i + 12));
  });

  it('refuses a --log-file that cannot be opened, at once', () => {
    expect(() => createLogger({ level: 'info', file: '/proc/nope/x.log', redact })).toThrow(LogFileError);
  });

  it('warns once on stderr and goes on when the log file fails (ENOSPC on /dev/full)', async () => {
    const stderrFile = tempFile('stderr.log');
    const { logger, close } = createLogger({ level: 'info', file: '/dev/full', redact, stderrFd: openSync(stderrFile, 'a') });
    for (let i = 0; i < 200; i++) logger.info({ i }, 'line');
    await close();
    const stderr = readFileSync(stderrFile, 'utf8');
    expect(stderr.match(/cannot write --log-file \/dev\/full \(ENOSPC\)/g)).toHaveLength(1);
    expect(stderr.match(/"msg":"line"/g)).toHaveLength(200);
  });

  it('refuses a --log-file whose folder does not exist, naming the folder, and creates nothing', () => {
    const top = tempFile('logs');
    const file = join(top, 'nested', 'deeper', 'bridge.log');
    expect(() => createLogger({ level: 'info', file, redact })).toThrow(
      `cannot open --log-file ${file}: the folder ${join(top, 'nested', 'deeper')} does not exist; create it first (mkdir -p ${join(top, 'nested', 'deeper')})`,
    );
    expect(existsSync(join(top, 'nested'))).toBe(false);
    expect(existsSync(top)).toBe(false);
  });

  it('appends to a --log-file in a folder that exists', async () => {
    const file = tempFile('bridge.log');
    writeFileSync(file, 'earlier\n');
    const { logger, close } = createLogger({ level: 'info', file, redact, stderrFd: openSync(tempFile('stderr.log'), 'a') });
    logger.info('appended');
    await close();
    const text = readFileSync(file, 'utf8');
    expect(text.startsWith('earlier\n')).toBe(true);
    expect(text).toContain('"msg":"appended"');
  });

  it('creates a --log-file readable by its owner only, whatever the umask', async () => {
    const file = tempFile('bridge.log');
    const umask = process.umask(0o022);
    try {
      const { logger, close } = createLogger({ level: 'info', file, redact, stderrFd: openSync(tempFile('stderr.log'), 'a') });
      logger.info('private');
      await close();
    } finally {
      process.umask(umask);
    }
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('refuses a --log-file under a path that is a file, naming it', () => {
    const plain = tempFile('plain');
    writeFileSync(plain, '');
    expect(() => createLogger({ level: 'info', file: join(plain, 'sub', 'x.log'), redact })).toThrow(
      /cannot open --log-file .*plain\/sub\/x\.log: part of .*plain\/sub is a file, not a folder/,
    );
  });

  it('drops lines logged after close, and a second close resolves at once', async () => {
    const stderrFile = tempFile('stderr.log');
    const { logger, close } = createLogger({ level: 'info', redact, stderrFd: openSync(stderrFile, 'a') });
    logger.info('before');
    await close();
    logger.info('after');
    await close();
    const text = readFileSync(stderrFile, 'utf8');
    expect(text).toContain('"msg":"before"');
    expect(text).not.toContain('"msg":"after"');
  });

  it('masks secrets in every line', async () => {
    const stderrFile = tempFile('stderr.log');
    const { logger, close } = createLogger({ level: 'info', redact, stderrFd: openSync(stderrFile, 'a') });
    logger.info({ body: 'echo logger-secret-123' }, 'token logger-secret-123');
    await close();
    expect(readFileSync(stderrFile, 'utf8')).not.toContain('logger-secret-123');
  });

  it('drops lines past MAX_LOG_BUFFER_BYTES while the reader is away, never blocking, and says how many once it reads', async () => {
    const fifo = tempFile('stderr.fifo');
    execFileSync('mkfifo', [fifo]);
    const readFd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writeFd = openSync(fifo, 'w');
    const { logger, close } = createLogger({ level: 'info', redact, stderrFd: writeFd });
    const line = 'x'.repeat(1000);
    const started = performance.now();
    const lines = Math.ceil((3 * MAX_LOG_BUFFER_BYTES) / line.length);
    for (let i = 0; i < lines; i++) logger.info({ i }, line);
    expect(performance.now() - started).toBeLessThan(5_000); // nothing waited for the reader

    const reader = new Socket({ fd: readFd, readable: true, writable: false });
    let text = '';
    reader.setEncoding('utf8');
    const notice = await new Promise<string>((resolve) => {
      reader.on('data', (chunk: string) => {
        text += chunk;
        const match = /"dropped":(\d+)/.exec(text);
        if (match !== null) resolve(match[1]!);
      });
    });
    const written = text.match(/"msg":"x+"/g)?.length ?? 0;
    expect(Number(notice)).toBeGreaterThan(0);
    expect(written).toBeLessThan(lines);
    logger.info('after');
    await close();
    reader.destroy();
    expect(written + Number(notice)).toBe(lines); // every line either written or counted
  });
});
