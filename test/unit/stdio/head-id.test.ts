import { describe, expect, it } from 'vitest';
import { idInHead } from '../../../src/stdio/head-id.js';

const head = (text: string) => idInHead(Buffer.from(text));

describe('idInHead', () => {
  it('reads the top-level id of a message cut anywhere after it', () => {
    expect(head('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"text":"xxxx')).toBe(7);
    expect(head('{ "jsonrpc" : "2.0" , "id" : "call-\\"7\\"" , "params": {')).toBe('call-"7"');
    expect(head('{"params":{"id":1,"a":[1,{"id":2}],"s":"\\"id\\":3"},"id":"late","method":"x","params2":"yyy')).toBe('late');
  });

  it('reads nothing from a nested id, a cut id, an id after the cut, or one that is no usable id', () => {
    expect(head('{"jsonrpc":"2.0","method":"tools/call","params":{"id":5,"text":"xxxx')).toBeUndefined();
    expect(head('{"jsonrpc":"2.0","id":"call-12')).toBeUndefined();
    expect(head('{"jsonrpc":"2.0","id":12')).toBeUndefined();
    expect(head('{"jsonrpc":"2.0","id":1.5,"x":"')).toBeUndefined();
    expect(head('{"jsonrpc":"2.0","id":null,"x":"')).toBeUndefined();
    expect(head('[{"id":1},')).toBeUndefined();
    expect(head('not json "id":1')).toBeUndefined();
  });
});
