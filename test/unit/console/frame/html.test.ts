import { Href, href, Html, html } from '../../../../src/console/frame/html';

describe('console templates', () => {
  it('When values hold markup, then they are escaped; markup made by the tag is kept', () => {
    const name = '<script>alert("x")</script>&';
    expect(html`<p title="${name}">${name}${html`<b>${1}</b>`}${[name, null, false, undefined]}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;<b>1</b>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;</p>',
    );
  });

  it('When a link is built from a payload value, then it stays a path of ours', () => {
    expect(href(['orders', 'javascript:alert(1)']).path).toBe('/console/orders/javascript%3Aalert(1)');
    expect(href(['orders', '../../x?y#z']).path).toBe('/console/orders/..%2F..%2Fx%3Fy%23z');
    expect(href(['deliveries'], { outcome: 'a&b', pos: '' }).path).toBe('/console/deliveries?outcome=a%26b');
  });

  it('When a link is interpolated, then it is written as an escaped attribute value', () => {
    const link = href(['deliveries'], { outcome: 'a', pos: '"b' });
    expect(link).toBeInstanceOf(Href);
    expect(html`<a href="${link}">x</a>`.text).toBe('<a href="/console/deliveries?outcome=a&amp;pos=%22b">x</a>');
  });

  it('When markup or a link is made outside html.ts, then it does not compile', () => {
    // @ts-expect-error Html's constructor is private: only the html tag makes markup.
    const markup = (): Html => new Html('<script>');
    // @ts-expect-error Href's constructor is private: only href() makes links.
    const link = (): Href => new Href('javascript:alert(1)');
    expect([typeof markup, typeof link]).toEqual(['function', 'function']);
  });

  it('When an object literal poses as markup or a link, then it does not compile', () => {
    const forged = { text: '<script>x</script>', toString: () => '<script>x</script>' };
    // @ts-expect-error Html is nominal (a #private field): an object of the same shape is not markup.
    const markup: Html = forged;
    // @ts-expect-error Href is nominal likewise.
    const link: Href = { path: 'javascript:alert(1)', at: () => link, toString: () => 'javascript:alert(1)' };
    expect([typeof markup, typeof link]).toEqual(['object', 'object']);
  });

  it("When an object made with Html's or Href's prototype is interpolated, then the page is refused, nothing rendered", () => {
    const forge = <T extends object>(prototype: T, field: string, value: string): T =>
      Object.create(prototype, { [field]: { value } }) as T;
    const markup = forge(Html.prototype, 'text', '<script>x</script>');
    const link = forge(Href.prototype, 'path', 'javascript:alert(1)');
    expect(markup).toBeInstanceOf(Html);
    expect(() => html`<p>${markup}</p>`).toThrow(TypeError);
    expect(() => html`<a href="${link}">x</a>`).toThrow(TypeError);
    expect(
      () =>
        html`<ul>
          ${[html`<li>ok</li>`, markup]}
        </ul>`,
    ).toThrow(TypeError);
    // Markup the tag made passes as ever.
    expect(html`<p>${html`<b>${'<i>'}</b>`}</p>`.text).toBe('<p><b>&lt;i&gt;</b></p>');
  });
});
