import { fragment, statement } from '../../src/recording/sqlSession';

describe('statement', () => {
  it('When values are interpolated, then each becomes a numbered parameter in order', () => {
    expect(statement('s')`SELECT ${'a'}::text, ${2}::int`).toEqual({
      name: 's',
      text: 'SELECT $1::text, $2::int',
      values: ['a', 2],
    });
  });

  it('When a fragment is interpolated, then its text is spliced in and its values numbered where they stand', () => {
    const part = fragment`x = ${'b'} AND y = ${fragment`${'c'}`}`;
    const s = statement('s')`SELECT ${'a'} WHERE ${part} OR z = ${'d'}`;
    expect(s.text).toBe('SELECT $1 WHERE x = $2 AND y = $3 OR z = $4');
    expect(s.values).toEqual(['a', 'b', 'c', 'd']);
  });

  it('When the same fragment text carries other values, then the statement text is the same (one prepared statement)', () => {
    const make = (v: number) => statement('s')`WITH a AS (${fragment`SELECT ${v}::int`}) SELECT ${v + 1}::int`;
    expect(make(1).text).toBe(make(5).text);
    expect(make(5).values).toEqual([5, 6]);
  });
});
