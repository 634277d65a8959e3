// A number that changes once per turn of the event loop, for work done at most once per turn per
// object (a hub judging its pacing): one setImmediate per turn for all of them, instead of one per
// object (a hundred active pools made a hundred per turn).
let turn = 0;
let advancing = false;

export function currentTurn(): number {
  if (!advancing) {
    advancing = true;
    setImmediate(() => {
      turn += 1;
      advancing = false;
    });
  }
  return turn;
}
