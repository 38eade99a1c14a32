import {
  basicAuthMatches,
  declaredLengthExceeds,
  isJsonContentType,
  parseBasicCredentials,
  readProcessingTime,
} from '../../../src/intake/requestChecks';

const basic = (userPassword: string): string => `Basic ${Buffer.from(userPassword, 'utf8').toString('base64')}`;

describe('isJsonContentType', () => {
  it.each([
    'application/json;charset=UTF-8',
    'application/json',
    'Application/JSON; Charset="utf-8"',
    'application/json; charset=utf8',
    'application/cloudevents+json',
    'application/vnd.api+json;charset=UTF-8',
  ])('When the media type is %s, then it is JSON', (header) => {
    expect(isJsonContentType(header)).toBe(true);
  });

  it.each([
    [undefined],
    [''],
    ['text/plain'],
    ['application/x-www-form-urlencoded'],
    ['application/jsonp'],
    ['text/json'],
    ['application/json;charset=ISO-8859-2'],
    ['application/json; charset=utf-16'],
    ['application/+json'],
  ])('When the media type is %s, then it is not a JSON body read as UTF-8', (header) => {
    expect(isJsonContentType(header)).toBe(false);
  });
});

describe('declaredLengthExceeds', () => {
  it('When Content-Length is above the limit, then it exceeds; at the limit, below it or absent, it does not', () => {
    expect([undefined, '0', '1023', '1024', '1025', ' 2048 '].map((h) => declaredLengthExceeds(h, 1024))).toEqual([
      false,
      false,
      false,
      false,
      true,
      true,
    ]);
  });

  it('When Content-Length is not a number, then it is left to the body reader, which stops at the limit', () => {
    expect(['abc', '1e400', ''].map((h) => declaredLengthExceeds(h, 1024))).toEqual([false, false, false]);
  });
});

describe('parseBasicCredentials', () => {
  it('When the value is user:password, then the user ends at the first colon and the password keeps the rest', () => {
    expect(parseBasicCredentials('shop:s3cret')).toEqual({ user: 'shop', password: 's3cret' });
    expect(parseBasicCredentials('shop:a:b:')).toEqual({ user: 'shop', password: 'a:b:' });
    expect(parseBasicCredentials('shop:')).toEqual({ user: 'shop', password: '' });
  });

  it.each([[''], ['shop'], [':password'], [':']])('When the value is "%s", then it is not user:password', (value) => {
    expect(parseBasicCredentials(value)).toBeNull();
  });
});

describe('basicAuthMatches', () => {
  const expected = { user: 'shop', password: 'pa:ss' };

  it('When the header carries the configured user and password, then it matches, whatever the scheme case and spacing', () => {
    expect(basicAuthMatches(basic('shop:pa:ss'), expected)).toBe(true);
    expect(basicAuthMatches(`basic   ${Buffer.from('shop:pa:ss').toString('base64')}  `, expected)).toBe(true);
  });

  it.each([
    ['no header', undefined],
    ['another password', basic('shop:pass')],
    ['another user', basic('Shop:pa:ss')],
    ['the password alone', basic('pa:ss')],
    ['another scheme', `Bearer ${Buffer.from('shop:pa:ss').toString('base64')}`],
    ['no credentials', 'Basic '],
    ['not base64', 'Basic shop:pa:ss'],
  ])('When the header has %s, then it does not match', (_what, header) => {
    expect(basicAuthMatches(header, expected)).toBe(false);
  });
});

describe('readProcessingTime', () => {
  it('When Svc-Processing-Time is a whole number of milliseconds, then it is read', () => {
    expect(['0', '250', ' 1200 ', '999999999'].map(readProcessingTime)).toEqual([0, 250, 1200, 999_999_999]);
  });

  it.each([[undefined], [''], ['-1'], ['1.5'], ['12ms'], ['1000000000'], ['0x10']])(
    'When it is %s, then there is none',
    (header) => {
      expect(readProcessingTime(header)).toBeNull();
    },
  );
});
