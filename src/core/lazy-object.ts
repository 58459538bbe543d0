// Members of a parsed-JSON stand-in: own data properties as JSON.parse makes them, or ones decoded on first read.

import type { JsonObject } from './json-rpc.js';

/** An own data property as JSON.parse makes it ("__proto__" included); a later duplicate replaces it. */
export function setMember(object: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

/** A member computed the first time it is read, then an ordinary data property; a write before that replaces it. */
export function defineOpenedOnRead(object: JsonObject, key: string, open: () => unknown): void {
  Object.defineProperty(object, key, {
    get() {
      const value = open();
      setMember(object, key, value);
      return value;
    },
    set(value: unknown) {
      setMember(object, key, value);
    },
    enumerable: true,
    configurable: true,
  });
}

/** Where a stand-in keeps the bytes of its members that are decoded only when read. */
const MEMBER_BYTES = Symbol('member bytes');

/** Lets `memberBytesOf` read a stand-in's undecoded members as bytes, without decoding them. */
export function keepMemberBytes(object: JsonObject, bytesOf: (key: string) => Buffer | undefined): void {
  Object.defineProperty(object, MEMBER_BYTES, { value: bytesOf, enumerable: false });
}

/** The bytes of a member that has not been decoded yet, or undefined (a small member, or no stand-in). */
export function memberBytesOf(object: JsonObject, key: string): Buffer | undefined {
  const descriptor = Object.getOwnPropertyDescriptor(object, key);
  if (descriptor?.get === undefined) return undefined;
  return (object as { [MEMBER_BYTES]?: (key: string) => Buffer | undefined })[MEMBER_BYTES]?.(key);
}
