"""Catalogue files of each format, written as 1C, shops and people write them."""

from __future__ import annotations

import io

TEMPLATE_HEADER = "own_code;name;brand;article;barcode;unit;category"


def template_csv(rows: list[tuple], *, header: str = TEMPLATE_HEADER, sep: str = ";") -> str:
    lines = [header] + [sep.join(str(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def template_xlsx(rows: list[list]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(TEMPLATE_HEADER.split(";"))
    for row in rows:
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def commerceml(products: str, *, only_changes: bool = False, namespace: bool = True) -> str:
    xmlns = ' xmlns="urn:1C.ru:commerceml_2"' if namespace else ""
    changes = "true" if only_changes else "false"
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<КоммерческаяИнформация{xmlns} ВерсияСхемы="2.05" ДатаФормирования="2026-12-01T10:00:00">
  <Классификатор>
    <Ид>cls</Ид>
    <Наименование>Классификатор (Основной каталог товаров)</Наименование>
    <Группы>
      <Группа>
        <Ид>g-fix</Ид>
        <Наименование>Крепёж</Наименование>
        <Группы>
          <Группа><Ид>g-bolt</Ид><Наименование>Болты</Наименование></Группа>
        </Группы>
      </Группа>
    </Группы>
    <Свойства>
      <Свойство>
        <Ид>p-maker</Ид>
        <Наименование>Производитель</Наименование>
        <ТипЗначений>Справочник</ТипЗначений>
        <ВариантыЗначений>
          <Справочник><ИдЗначения>v-bosch</ИдЗначения><Значение>Bosch</Значение></Справочник>
        </ВариантыЗначений>
      </Свойство>
    </Свойства>
  </Классификатор>
  <Каталог СодержитТолькоИзменения="{changes}">
    <Ид>cat</Ид>
    <ИдКлассификатора>cls</ИдКлассификатора>
    <Наименование>Основной каталог товаров</Наименование>
    <Товары>{products}</Товары>
  </Каталог>
</КоммерческаяИнформация>
"""


CML_BOLT = """
      <Товар>
        <Ид>bd72d8f9-55bc-11d9-848a-00112f43529a</Ид>
        <Штрихкод>4600000000008</Штрихкод>
        <Артикул>DIN933-M8x40</Артикул>
        <Наименование>Болт М8х40 оцинкованный</Наименование>
        <БазоваяЕдиница Код="796" НаименованиеПолное="Штука"
                        МеждународноеСокращение="PCE">шт</БазоваяЕдиница>
        <Группы><Ид>g-bolt</Ид></Группы>
        <Описание>Болт с шестигранной головкой</Описание>
        <ЗначенияСвойств>
          <ЗначенияСвойства><Ид>p-maker</Ид><Значение>v-bosch</Значение></ЗначенияСвойства>
        </ЗначенияСвойств>
        <ЗначенияРеквизитов>
          <ЗначениеРеквизита><Наименование>ВидНоменклатуры</Наименование><Значение>Товар</Значение></ЗначениеРеквизита>
          <ЗначениеРеквизита><Наименование>Код</Наименование><Значение>00-00001234</Значение></ЗначениеРеквизита>
        </ЗначенияРеквизитов>
      </Товар>"""
CML_NUT = """
      <Товар>
        <Ид>bd72d8fa-55bc-11d9-848a-00112f43529a</Ид>
        <Артикул>DIN934-M8</Артикул>
        <Наименование>Гайка М8</Наименование>
        <БазоваяЕдиница Код="796" НаименованиеКраткое="шт"/>
        <Группы><Ид>g-fix</Ид></Группы>
        <Изготовитель><Ид>m-1</Ид><Наименование>Kreps</Наименование></Изготовитель>
        <ЗначенияРеквизитов>
          <ЗначениеРеквизита><Наименование>Код</Наименование><Значение>00-00001235</Значение></ЗначениеРеквизита>
        </ЗначенияРеквизитов>
      </Товар>"""
CML_DELETED = """
      <Товар Статус="Удален">
        <Ид>bd72d8fb-55bc-11d9-848a-00112f43529a</Ид>
        <Наименование>Шайба 8</Наименование>
      </Товар>"""


def yml(offers: str, *, encoding: str = "UTF-8") -> str:
    return f"""<?xml version="1.0" encoding="{encoding}"?>
<!DOCTYPE yml_catalog SYSTEM "shops.dtd">
<yml_catalog date="2026-12-01T10:00+03:00">
  <shop>
    <name>Магазин</name>
    <company>ООО Магазин</company>
    <url>https://shop.example</url>
    <currencies><currency id="RUR" rate="1"/></currencies>
    <categories>
      <category id="1">Бытовая техника</category>
      <category id="10" parentId="1">Мелкая техника для кухни</category>
    </categories>
    <offers>{offers}</offers>
  </shop>
</yml_catalog>
"""


YML_KETTLE = """
      <offer id="12346" type="vendor.model" available="true">
        <url>https://shop.example/12346</url>
        <price>1490</price>
        <currencyId>RUR</currencyId>
        <categoryId>10</categoryId>
        <typePrefix>Чайник электрический</typePrefix>
        <vendor>Bosch</vendor>
        <model>TWK 7203</model>
        <vendorCode>TWK7203</vendorCode>
        <barcode>4600000000008</barcode>
        <barcode>4006381333931</barcode>
        <description><![CDATA[<p>Чайник</p>]]></description>
      </offer>"""
YML_IRON = """
      <offer id="12347" available="true">
        <name>Утюг Philips GC1905</name>
        <vendor>Philips</vendor>
        <categoryId>1</categoryId>
        <price>2290</price>
      </offer>"""


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE yml_catalog [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<yml_catalog><shop><offers><offer id="1"><name>&lol9;</name></offer></offers></shop></yml_catalog>
"""
