"""Sitemap documents the reader's parity tests share (``test_cparse``, ``test_cpush``):
a urlset with every extension namespace declared, its corner cases, and generated ones."""

from __future__ import annotations

import gzip

from hypothesis import strategies as st

IMG = 'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"'


XH = 'xmlns:xhtml="http://www.w3.org/1999/xhtml"'


VID = 'xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"'


NEWS = 'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"'


SM = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*urls: str, ns: str = SM) -> bytes:
    body = "".join(f"<url>{u}</url>" for u in urls)
    return f'<?xml version="1.0"?><urlset {ns} {IMG} {XH} {VID} {NEWS}>{body}</urlset>'.encode()


CORNERS = {
    "plain": urlset("<loc>https://e.com/a</loc><lastmod>2024-01-02</lastmod>"),
    "cdata": urlset("<loc><![CDATA[ https://e.com/a?x&y ]]></loc>"),
    "text then cdata": urlset("<loc>https://e.com/<![CDATA[a&b]]>/c</loc>"),
    "entities": urlset("<loc>https://e.com/?a=1&amp;b=&#233;&#x20AC;</loc>"),
    "comment inside loc": urlset("<loc>https://e.com/<!-- x -->a</loc>"),
    "markup inside loc": urlset("<loc>https://e.com/<b>bold</b>/a</loc>"),
    "markup inside lastmod": urlset("<loc>https://e.com/a</loc><lastmod>2024<i>-01</i></lastmod>"),
    "markup inside priority": urlset("<loc>https://e.com/a</loc><priority>0.<b>5</b></priority>"),
    "empty values": urlset("<loc></loc>", "<loc>https://e.com/b</loc><lastmod/><priority/>"),
    "two locs": urlset("<loc>https://e.com/1</loc><loc>https://e.com/2</loc>"),
    "empty then real loc": urlset("<loc/><loc>https://e.com/2</loc>"),
    "last lastmod wins": urlset(
        "<loc>https://e.com/a</loc><lastmod>2020-01-01</lastmod><lastmod>2021-01-01</lastmod>"
    ),
    "changefreq and priority": urlset(
        "<loc>https://e.com/a</loc><changefreq> Weekly </changefreq><priority>1.5</priority>",
        "<loc>https://e.com/b</loc><changefreq>sometimes</changefreq><priority>.3</priority>",
    ),
    # _short_text's cache: repeats, near-repeats (space, case, one more digit), texts
    # that share a slot, one past the cached length, CDATA, and more than the slots hold.
    "short texts shared": urlset(
        *(
            f"<loc>https://e.com/{i}</loc><changefreq>{cf}</changefreq><priority>{pr}</priority>"
            for i, (cf, pr) in enumerate(
                [
                    ("weekly", "0.5"),
                    ("weekly", "0.5"),
                    (" weekly", "0.50"),
                    ("Weekly", "<![CDATA[0.5]]>"),
                    ("wkly", "0.5 "),
                    ("daily", "0.1234567890123"),
                    ("daily", "0.12345678901234"),
                    ("daily", "0.123456789012345"),
                    ("daily", "0.1234567890123456"),
                    *((f"x{k}", f"0.{k}") for k in range(40)),
                    ("weekly", "0.5"),
                ]
            )
        )
    ),
    "no namespace": urlset("<loc>https://e.com/a</loc>", ns=""),
    "google 0.84": urlset(
        "<loc>https://e.com/a</loc>", ns='xmlns="http://www.google.com/schemas/sitemap/0.84"'
    ),
    "foreign namespace core": urlset(
        '<x:loc xmlns:x="urn:x">https://e.com/a</x:loc>', "<image:loc>https://e.com/b</image:loc>"
    ),
    "images": urlset(
        "<loc>https://e.com/a</loc><image:image><image:loc> https://i.e.com/1.jpg </image:loc>"
        "<image:caption>c &amp; d</image:caption><image:title/><image:geo_location>X"
        "</image:geo_location><image:license>L</image:license><image:other>o</image:other>"
        "</image:image><image:image><image:caption>no loc</image:caption></image:image>"
        "<image:image><image:loc>   </image:loc><image:loc>https://i.e.com/2.jpg</image:loc>"
        "</image:image>"
    ),
    "image with nested markup": urlset(
        "<loc>https://e.com/a</loc><image:image><image:loc>https://i.e.com/<b>1</b>.jpg"
        "</image:loc></image:image>"
    ),
    "alternates": urlset(
        "<loc>https://e.com/a</loc>"
        '<xhtml:link rel="alternate" hreflang=" de " href=" https://e.com/de "/>'
        '<xhtml:link rel="alternate" hreflang="fr" href="https://e.com/?a=1&amp;b=2"/>'
        '<xhtml:link rel="canonical" hreflang="en" href="https://e.com/en"/>'
        '<xhtml:link rel="alternate" href="https://e.com/nolang"/>'
        '<xhtml:link rel="alternate" hreflang="" href="https://e.com/emptylang"/>'
        '<xhtml:link xmlns:o="urn:o" o:rel="alternate" hreflang="it" href="https://e.com/it"/>'
        '<xhtml:link rel="alternate" hreflang="es" href="https://e.com/&#233;s"/>'
    ),
    "video and news": urlset(
        "<loc>https://e.com/a</loc><video:video><video:title>T</video:title>"
        "<video:content_loc>https://v.e.com/1.mp4</video:content_loc></video:video>"
        "<news:news><news:title>N</news:title><news:publication_date>2024-01-02"
        "</news:publication_date></news:news>"
    ),
    # Every field of parse_news and parse_video, and what their rules decide: first
    # non-empty text wins, any namespace (or none) for a field, a publication only with
    # a namespace, dates W3C or not, comma lists with empty items, CDATA and entities.
    "news in full": urlset(
        "<loc>https://e.com/a</loc><news:news><news:publication><news:name> The Daily "
        "</news:name><news:language>en</news:language><news:name>2nd</news:name>"
        "</news:publication><news:publication><news:name>Other</news:name>"
        "</news:publication><news:publication_date>2024-05-01T10:00:00+02:00"
        "</news:publication_date><news:title/><news:title>  </news:title><title>T &amp; U"
        "</title><news:keywords>a, b,, c ,</news:keywords><news:genres>Blog, Opinion"
        "</news:genres><news:stock_tickers>NASDAQ:A, BOM:1</news:stock_tickers>"
        "<news:access><![CDATA[Subscription]]></news:access><news:other>x</news:other>"
        "</news:news>",
        "<loc>https://e.com/b</loc><news:news><news:publication_date>05/01/2024"
        "</news:publication_date><publication><name>default namespace</name></publication>"
        "</news:news>",
        "<loc>https://e.com/c</loc><news:news><news:publication_date>2024-02-30"
        "</news:publication_date></news:news><news:news><news:title>second</news:title>"
        "</news:news>",
        "<loc>https://e.com/d</loc><news:news/>",
        "<loc>https://e.com/e</loc><news:news><news:title>x <b>y</b></news:title></news:news>",
        "<loc>https://e.com/f</loc><news:news><news:publication><news:name>a<i>b</i>"
        "</news:name></news:publication></news:news>",
    ),
    "videos in full": urlset(
        "<loc>https://e.com/a</loc><video:video><video:thumbnail_loc>https://e.com/t.jpg"
        "</video:thumbnail_loc><video:title> T </video:title><video:description>D &amp; E"
        "</video:description><video:content_loc>https://v.e.com/1.mp4</video:content_loc>"
        "<video:player_loc>https://e.com/p</video:player_loc><video:duration>600"
        "</video:duration><video:publication_date>2024-05-01</video:publication_date>"
        "<video:expiration_date>bad</video:expiration_date><video:family_friendly>yes"
        "</video:family_friendly><video:live>no</video:live><video:tag> a </video:tag>"
        "<video:tag/><video:tag>b</video:tag><tag>default namespace</tag></video:video>"
        "<video:video><video:title>second</video:title></video:video><video:video/>",
        "<loc>https://e.com/b</loc><video:video><video:tag>x<b>y</b></video:tag></video:video>",
        "<loc>https://e.com/c</loc><video:video><video:title>t<b>y</b></video:title></video:video>",
    ),
    "invalid and relative locs": urlset(
        "<loc>/relative</loc>", "<loc>ftp://e.com/x</loc>", "<loc>https://e.com/a</loc>"
    ),
    # Issue 30 item 1: what no client could connect to is dropped on both paths.
    "hosts and ports": urlset(
        *(
            f"<loc>{loc}</loc>"
            for loc in [
                "https://exa mple.com/x",
                "http://[::1/x",
                "http://e.com:99999/x",
                "http://e.com:0/x",
                "http://e.com:65535/x",
                "http://" + "a" * 64 + ".com/x",
                "http://" + ".".join(["a" * 50] * 6) + "/x",
                "http:///x",
                "http://u@/x",
                "http://u@e.com/x",
                "http://999.1.1.1/x",
                "http://1.2.3.4/x",
                "http://127.0.0.1:8080/x",
                "http://0.0.0.0/x",
                "http://255.255.255.255/x",
                "http://256.1.1.1/x",
                "http://01.2.3.4/x",
                "http://1.2.3.4.5/x",
                "http://1.2.3/x",
                "http://1.2.3.1234/x",
                "http://a.1.2.3/x",
                "http://e.com./x",
                "http://999.1.1.1./x",
                "http://1.2.3.4./x",
                "http://" + "a" * 63 + "." + ".".join(["b" * 63] * 3) + "./x",
                "http://e_x.com/x",
                "http://exa\tmple.com/x",
                "http://[::1]/x",
                "http://e.com:/x",
            ]
        )
    ),
    "duplicates": urlset("<loc>https://e.com/a</loc>", "<loc> https://e.com/a </loc>"),
    "truncated": urlset("<loc>https://e.com/a</loc>", "<loc>https://e.com/b</loc>")[:-30],
    "latin-1": (
        b'<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>https://e.com/\xe9</loc>'
        b"</url></urlset>"
    ),
    "utf-16": '<?xml version="1.0" encoding="UTF-16"?><urlset><url><loc>https://e.com/\u00e9'
    "</loc></url></urlset>".encode("utf-16"),
    "invalid values repeated": urlset(
        *(
            f"<loc>https://e.com/{i}</loc><changefreq>nope</changefreq><priority>2</priority>"
            for i in range(3)
        )
    ),
    # The drain: only the root's children are entries, whatever their depth elsewhere.
    "url nested in loc": urlset("<loc>https://e.com/a<url><loc>https://e.com/in</loc></url></loc>"),
    "url nested in other": urlset(
        "<loc>https://e.com/a</loc><x><url><loc>https://e.com/in</loc></url></x>"
    ),
    "index": (
        f"<sitemapindex {SM}><sitemap><loc>https://e.com/1.xml</loc><lastmod>2024-01-02"
        "</lastmod></sitemap><sitemap><loc>https://e.com/2.xml<sitemap><loc>https://e.com/in"
        "</loc></sitemap></loc></sitemap><sitemap><loc>/3.xml</loc></sitemap></sitemapindex>"
    ).encode(),
    "many slices": urlset(
        *(f"<loc>https://e.com/{i}</loc><priority>0.{i % 10}</priority>" for i in range(3000))
    ),
    # _cpush's fast path (values read without their nodes) and what makes it hand a
    # <url> back to the tree: blanks libxml2 keeps or drops by the tree it has built,
    # text beside the values, markup, entities, attributes, prefixes, xml:space, a DTD.
    "blanks around values": (
        f"<urlset {SM}>\n  <url>\n    <loc>\n      https://e.com/a\n    </loc>\n"
        "    <lastmod> 2024-01-02 </lastmod>\n    <changefreq>\tdaily\r\n</changefreq>\n"
        "  </url>\n  <url><loc>https://e.com/b</loc>  </url>\n  <url>  </url>\n</urlset>\n"
    ).encode(),
    "blank values": urlset(
        "<loc>   </loc><loc>https://e.com/a</loc><lastmod> </lastmod><priority>  </priority>",
        "<loc>https://e.com/b</loc><changefreq>\n</changefreq>",
    ),
    "blanks and a comment in a value": urlset(
        "<loc>  <!-- c -->https://e.com/a</loc>",
        "<loc>https://e.com/b<!-- c -->  <!-- d -->c</loc>",
        "<loc>https://e.com/c&amp;   <!-- c -->d</loc><lastmod>  <?pi x?>2024-01-02</lastmod>",
    ),
    "blank references and cdata before markup": urlset(
        "<loc>&#32;<!-- c -->https://e.com/a</loc>",
        "<loc><![CDATA[  ]]><!-- c -->https://e.com/b</loc>",
        "<loc>&#32;&#10;<b/>https://e.com/c</loc>",
    ),
    "blanks then markup in a value": urlset(
        "<loc>  <b>x</b>https://e.com/a</loc>",
        "<lastmod>2024-01-02</lastmod><loc>https://e.com/b<b/>  </loc>",
    ),
    "text beside values": urlset(
        "<loc>https://e.com/a</loc>junk<lastmod>2024-01-02</lastmod>",
        "junk<loc>https://e.com/b</loc>",
        "<loc>https://e.com/c</loc><![CDATA[ ]]>",
        "<loc>https://e.com/d</loc>&#32;",
        "<loc>https://e.com/e</loc><![CDATA[x]]><priority>0.5</priority>",
    ),
    "xml:space": (
        f'<urlset {SM}><url xml:space="preserve"> <loc> https://e.com/a </loc> </url>'
        f'<url><loc xml:space="preserve"> https://e.com/b </loc></url></urlset>'
    ).encode(),
    "xml:space on the root": (
        f'<urlset {SM} xml:space="preserve"><url> <loc>https://e.com/c</loc> </url></urlset>'
    ).encode(),
    "cdata then blanks": urlset(
        "<loc><![CDATA[https://e.com/a]]>   <!-- c -->b</loc>",
        "<loc><![CDATA[https://e.com/]]>  <b/>c</loc>",
        "<loc>https://e.com/d</loc><priority><![CDATA[0.5]]> <!-- c --> </priority>",
    ),
    "attributes on values": urlset(
        '<loc id="1">https://e.com/a</loc><lastmod a="b">2024-01-02</lastmod>',
        '<lastmod>2024-01-02</lastmod><loc xmlns:q="urn:q">https://e.com/b</loc>',
    ),
    "prefixed values": (
        b'<s:urlset xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9"><s:url><s:loc>'
        b"https://e.com/a</s:loc><s:lastmod>2024-01-02</s:lastmod></s:url><s:url><s:loc>"
        b'https://e.com/<s:b xmlns:s="urn:other">x</s:b></s:loc></s:url><s:url><s:loc>'
        b'https://e.com/c</s:loc><s:priority>0.5</s:priority><b xmlns:s="urn:o2"/></s:url>'
        b"<s:url><u:loc>https://e.com/d</u:loc></s:url></s:urlset>"
    ),
    "default namespace redeclared in markup": urlset(
        '<loc>https://e.com/a</loc><lastmod>2024-01-02<b xmlns="urn:other"/></lastmod>',
        '<loc>https://e.com/b</loc><x xmlns=""/><priority>0.5</priority>',
    ),
    "more values than the fast path holds": urlset(
        "<loc/>" * 40 + "<lastmod>2020-01-01</lastmod>" * 20 + "<loc>https://e.com/a</loc>"
        "<lastmod>2021-01-01</lastmod><priority>0.1</priority>" * 3,
        "<loc/>" * 15 + "<loc>https://e.com/b</loc>",
        "<loc>https://e.com/c</loc>"
        + "<image:image><image:loc>https://i.e.com/1</image:loc></image:image>" * 40,
        "<loc>https://e.com/d</loc>"
        + '<xhtml:link rel="alternate" hreflang="de" href="https://e.com/de"/>' * 33,
    ),
    # Images and alternates as WordPress, Shopify and shop plug-ins publish them: read by
    # _cpush's fast path, no node built (every field, blanks, CDATA, references).
    "images and alternates as sites publish them": (
        f"<urlset {SM} {IMG} {XH}>\n"
        "  <url>\n    <loc>https://e.com/a</loc>\n    <lastmod>2024-01-02</lastmod>\n"
        "    <image:image>\n      <image:loc> https://i.e.com/1.jpg </image:loc>\n"
        "      <image:title><![CDATA[T & U]]></image:title>\n"
        "      <image:caption>c &amp; d&#10;e</image:caption>\n"
        "      <image:geo_location>G</image:geo_location>\n"
        "      <image:license>https://e.com/l</image:license>\n"
        "      <image:title>second</image:title><image:loc/>\n    </image:image>\n"
        "    <image:image><image:loc>  </image:loc><image:loc>https://i.e.com/2.jpg</image:loc>"
        "</image:image>\n    <image:image><image:caption>no loc</image:caption></image:image>\n"
        "    <image:image/>\n  </url>\n"
        "  <url><loc>https://e.com/b</loc>\n"
        '    <xhtml:link rel="alternate" hreflang="de" href="https://e.com/de?a=1&amp;b=2"/>\n'
        '    <xhtml:link hreflang=" fr " rel="alternate" href=" https://e.com/&#38;fr&#233; "'
        ' type="text/html" media="all"></xhtml:link>\n'
        '    <xhtml:link rel="canonical" hreflang="en" href="https://e.com/en"/>\n'
        '    <xhtml:link rel="alternate" href="https://e.com/nolang"/>\n'
        '    <xhtml:link rel="alternate" hreflang="" href="https://e.com/emptylang"/>\n'
        '    <xhtml:link rel="alternate" hreflang="  " href="https://e.com/blanklang"/>\n'
        '    <xhtml:link rel=" alternate" hreflang="es" href="https://e.com/es"/>\n'
        '    <xhtml:link rel="alternate" hreflang="it" href="&#x9;https://e.com/it&#10;"/>\n'
        '    <xhtml:link rel="alternate" hreflang="x" href="a" rel2="b" href2="&amp;&amp;"/>\n'
        "    <image:image><image:loc>https://i.e.com/3.jpg</image:loc></image:image>\n"
        "    <changefreq>daily</changefreq>\n  </url>\n</urlset>\n"
    ).encode(),
    # ...and what sends such a <url> to the tree (one each), replayed at every point.
    "images and alternates the fast path leaves to the tree": urlset(
        '<loc>https://e.com/a</loc><image:image a="1"><image:loc>https://i.e.com/a</image:loc>'
        "</image:image>",
        "<loc>https://e.com/b</loc><image:image><image:loc>https://i.e.com/b</image:loc>"
        "<image:other>o</image:other></image:image>",
        "<loc>https://e.com/c</loc><image:image><image:loc>https://i.e.com/<b>c</b></image:loc>"
        "</image:image>",
        "<loc>https://e.com/d</loc><image:image>text<image:loc>https://i.e.com/d</image:loc>"
        "</image:image>",
        "<loc>https://e.com/e</loc><image:image> </image:image><priority>0.5</priority>",
        "<loc>https://e.com/f</loc><image:image><image:loc>https://i.e.com/f</image:loc>"
        "</image:image><other/><image:image><image:title>t</image:title></image:image>",
        "<loc>https://e.com/g</loc><image:image><image:image><image:loc>https://i.e.com/g"
        "</image:loc></image:image></image:image>",
        '<loc>https://e.com/i</loc><image:image><image:loc q="1">https://i.e.com/i</image:loc>'
        "</image:image>",
        '<loc>https://e.com/j</loc><image:image><loc xmlns="http://www.google.com/schemas/'
        'sitemap-image/1.1">https://i.e.com/j</loc></image:image>',
        "<loc>https://e.com/k</loc><image:image><image:loc>https://i.e.com/k</image:loc>"
        "<image:title>t<!-- c --><b/></image:title></image:image>",
        '<loc>https://e.com/l</loc><xhtml:link rel="alternate" hreflang="l" '
        'href="https://e.com/l">text</xhtml:link>',
        '<loc>https://e.com/m</loc><xhtml:link rel="alternate" hreflang="m" '
        'href="https://e.com/m"> </xhtml:link>',
        '<loc>https://e.com/n</loc><xhtml:link xml:lang="n" rel="alternate" hreflang="n" '
        'href="https://e.com/n"/>',
        '<loc>https://e.com/o</loc><xhtml:link xmlns:o="urn:o" o:rel="alternate" hreflang="o" '
        'href="https://e.com/o"/>',
        '<loc>https://e.com/p</loc><xhtml:link rel="alternate" hreflang="p" '
        'href="https://e.com/p"><b/></xhtml:link><lastmod>2024-01-02</lastmod>',
        '<loc>https://e.com/r</loc><xhtml:link rel="alternate" hreflang="r" '
        'href="https://e.com/r"/><video:video><video:title>v</video:title></video:video>',
        "<loc>https://e.com/s</loc><image:image><image:loc>https://i.e.com/s</image:loc>"
        '</image:image><xhtml:link rel="alternate" hreflang="s" href="https://e.com/s"/>'
        "<image:image><image:caption>c</image:caption><image:loc>https://i.e.com/s2"
        "</image:loc><image:title>t<b/></image:title></image:image>",
    ),
    "values then an extension": urlset(
        "<loc>https://e.com/a</loc><lastmod>2024-01-02</lastmod><priority>0.3</priority>"
        "<image:image><image:loc>https://i.e.com/1.jpg</image:loc></image:image>"
        "<changefreq>daily</changefreq>",
        "<loc>https://e.com/b</loc><other>o</other><lastmod>2024-01-03</lastmod>",
        "<loc>https://e.com/c</loc><url><loc>https://e.com/inner</loc></url>",
    ),
    "a dtd": (
        '<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY e "x"><!ELEMENT url (loc)>]>'
        f"<urlset {SM}><url> <loc> https://e.com/&e; </loc> </url>"
        "<url><loc>https://e.com/b</loc>\n</url></urlset>"
    ).encode(),
    "cut inside a value": urlset("<loc>https://e.com/a</loc>", "<loc>https://e.com/b</loc>")[:-30],
    # Issue 30 item 13: a default namespace with a '}' in it (not a valid URI), then text
    # after the root; the Python path split the tag "{http://www}sitemaps...}loc" at the
    # first '}' and found no loc.
    "namespace with a brace, text after the root": urlset(
        "<loc>https://e.com/a</loc>", ns='xmlns="http://www}sitemaps.org/schemas/sitemap/0.9"'
    )
    + b"junk",
    # Found by tests/property/test_reader_differential.py: a namespace URI that is not
    # valid (an error), then a relative one (a warning): lxml accepts the document, as
    # its close() looks at the last report only, and _cpush must too.
    "bad namespace, then a relative one": (
        b'<urlset xmlns:image="http://www.googl]]>e.com/schemas/sitemap-image/1.1" xmlns="ht0.9">'
        b"<url><loc>https://e.com/a</loc></url></urlset>"
    ),
}


# Generated documents: any mix of these children, in any order, any number of urls.
CHILDREN = [
    "<loc>https://e.com/{i}</loc>",
    "<loc> <![CDATA[https://e.com/{i}?q&r]]> </loc>",
    "<loc>https://e.com/<!-- c -->{i}&amp;x</loc>",
    "<loc>https://e.com/<em>{i}</em></loc>",
    "<loc>HTTPS://E.com/{i}</loc>",
    "<loc>\n  https://e.com/{i}  \n</loc>",
    "<loc>https://\u00e9.com/{i}</loc>",
    "<loc>http:///{i}</loc>",
    "<loc>https:// e.com/{i}</loc>",
    "<loc>https://?{i}</loc>",
    "<loc>hTTp://e.com/{i}</loc>",
    "<loc>https://e.com/{i}/" + "a" * 2050 + "</loc>",
    "<lastmod>2024-0{d}-01T10:00:00Z</lastmod>",
    "<lastmod>0{d}/01/2024</lastmod>",
    "<lastmod> 2024-0{d}-01 </lastmod>",
    "<lastmod>  </lastmod>",
    "<lastmod>2024-0{d}-01T10:00:00.5+01:00</lastmod>",
    "<lastmod>2024-0{d}-31</lastmod>",
    "<changefreq>{cf}</changefreq>",
    "<priority>0.{d}</priority>",
    "<priority>{d}</priority>",
    "<image:image><image:loc>https://i.e.com/{d}.jpg</image:loc>"
    "<image:title>t{d}</image:title></image:image>",
    "<image:image><image:caption>c</image:caption></image:image>",
    '<xhtml:link rel="alternate" hreflang="l{d}" href="https://e.com/l{d}"/>',
    '<xhtml:link rel="next" hreflang="x" href="https://e.com/n"/>',
    "<video:video><video:title>v{d}</video:title></video:video>",
    "<news:news><news:title>n{d}</news:title></news:news>",
    "<news:news><news:publication><news:name>P{d}</news:name><news:language>l{d}"
    "</news:language></news:publication><news:publication_date>2024-0{d}-01T10:00:00Z"
    "</news:publication_date><news:keywords>k{d}, ,x</news:keywords>"
    "<news:stock_tickers>S:{d}</news:stock_tickers></news:news>",
    "<news:news><news:publication_date>0{d}/01/2024</news:publication_date>"
    "<news:title><![CDATA[ t{d} ]]></news:title><news:genres>G</news:genres>"
    "<news:access>Registration</news:access></news:news>",
    "<news:news><news:title>a<b>{d}</b></news:title></news:news>",
    "<video:video><video:thumbnail_loc>https://e.com/{d}.jpg</video:thumbnail_loc>"
    "<video:publication_date>2024-0{d}-01</video:publication_date><video:tag>t{d}"
    "</video:tag><video:tag> </video:tag><video:live>no</video:live></video:video>",
    "<video:video><video:tag>a<b>{d}</b></video:tag></video:video>",
    "<other>ignored {d}</other>",
    # Images and alternates read by _cpush's fast path, and what sends them to the tree.
    "\n    ",
    "<image:image>\n  <image:loc> https://i.e.com/{d}.jpg </image:loc>\n  <image:caption>"
    "c &amp; {d}</image:caption>\n  <image:geo_location><![CDATA[G{d}]]></image:geo_location>"
    "<image:license>L</image:license><image:title/>\n</image:image>",
    "<image:image><image:loc>https://i.e.com/<b>{d}</b></image:loc></image:image>",
    "<image:image><image:foo>x</image:foo><image:loc>https://i.e.com/{d}</image:loc></image:image>",
    "<image:image> </image:image>",
    '<image:image a="1"><image:loc>https://i.e.com/{d}</image:loc></image:image>',
    '<xhtml:link rel="alternate" hreflang="x-{d}" href="https://e.com/?a={d}&amp;b=&#38;c">'
    "</xhtml:link>",
    '<xhtml:link type="text/html" rel="alternate" media="x" hreflang=" f{d} "'
    ' href=" https://e.com/f{d} " />',
    '<xhtml:link rel="alternate" hreflang="t{d}" href="https://e.com/t">t</xhtml:link>',
    '<xhtml:link xml:lang="en" rel="alternate" hreflang="p{d}" href="https://e.com/p"/>',
    '<xhtml:link rel="alternate" hreflang="e{d}" href="https://e.com/&#233;&lt;{d}"/>',
]


@st.composite
def generated(draw: st.DrawFn) -> bytes:
    urls = []
    for i in range(draw(st.integers(0, 8))):
        picks = draw(st.lists(st.sampled_from(CHILDREN), max_size=7))
        d = draw(st.integers(1, 9))
        cf = draw(st.sampled_from(["daily", "Monthly", "nope", ""]))
        urls.append("".join(p.format(i=i, d=d, cf=cf) for p in picks))
    data = urlset(*urls, ns=draw(st.sampled_from([SM, ""])))
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return gzip.compress(data) if draw(st.booleans()) else data
