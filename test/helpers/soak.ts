// Repetition counts: small enough for every `npm test`, large with FENBS_TEST_SOAK=1 (`npm run test:soak`).

/** True in a soak run. */
export const SOAK = process.env.FENBS_TEST_SOAK === '1';

/** `everyRun` repetitions in `npm test`, `soak` in a soak run. */
export function repetitions(everyRun: number, soak: number): number {
  return SOAK ? soak : everyRun;
}
