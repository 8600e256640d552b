/**
 * Seeded random numbers for the tests that compare a shortcut with the code
 * it stands in for on generated inputs: the same inputs on every run.
 */

/**
 * A source of integers below `n`: a linear congruential generator read from
 * its high bits. Its low bits repeat with short periods; drawn from them,
 * the generated inputs missed mistakes that the high bits find.
 */
export function seededBelow(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return Math.floor((state / 2147483648) * n);
  };
}
