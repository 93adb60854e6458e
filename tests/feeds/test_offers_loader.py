"""products_load reads a CommerceML offers package (offers.xml) as 1C writes it, by
content, within the loader's limits."""

from __future__ import annotations

import pytest

from products.loaders import CatalogueRefused, load_limits, read_catalogue

OFFERS = """<?xml version="1.0" encoding="UTF-8"?>
<КоммерческаяИнформация ВерсияСхемы="2.08" ДатаФормирования="2026-12-04T10:00:00">
 <ПакетПредложений СодержитТолькоИзменения="{changes}">
  <Ид>pkg#</Ид><Наименование>Пакет</Наименование>
  <ИдКаталога>cat</ИдКаталога><ИдКлассификатора>cls</ИдКлассификатора>
  <ТипыЦен><ТипЦены><Ид>t</Ид><Наименование>Розничная</Наименование>
   <Валюта>RUB</Валюта></ТипЦены></ТипыЦен>
  <Предложения>
   <Предложение>
    <Ид>bd72d8f9-55bc-11d9-848a-00112f43529a</Ид>
    <Штрихкод>4600000000008</Штрихкод>
    <Артикул>A-1</Артикул>
    <Наименование>Болт М8</Наименование>
    <БазоваяЕдиница Код="796" НаименованиеПолное="Штука">шт</БазоваяЕдиница>
    <Изготовитель><Ид>m</Ид><Наименование>Bosch</Наименование></Изготовитель>
    <ЗначенияРеквизитов><ЗначениеРеквизита><Наименование>Штрихкод</Наименование>
     <Значение>4600000000015</Значение></ЗначениеРеквизита></ЗначенияРеквизитов>
    <Цены><Цена><Представление>10 RUB за шт</Представление><ИдТипаЦены>t</ИдТипаЦены>
     <ЦенаЗаЕдиницу>10</ЦенаЗаЕдиницу><Валюта>RUB</Валюта><Единица>шт</Единица>
    </Цена></Цены>
    <Количество>3</Количество>
   </Предложение>
   <Предложение>
    <Ид>P-2</Ид><Наименование>Гайка</Наименование>
    <БазоваяЕдиница НаименованиеКраткое="упак"/>
   </Предложение>
  </Предложения>
 </ПакетПредложений>
</КоммерческаяИнформация>
"""


def test_an_offers_package_is_read_as_products(tmp_path):
    path = tmp_path / "offers.xml"
    path.write_text(OFFERS.format(changes="false"), encoding="utf-8")
    rows = read_catalogue(path)
    assert rows.format == "commerceml"
    assert rows.full
    assert rows.products == [
        (
            "bd72d8f9-55bc-11d9-848a-00112f43529a",
            "Болт М8",
            "Bosch",
            "A-1",
            ["4600000000008", "4600000000015"],
            "шт",
            "",
        ),
        ("P-2", "Гайка", "", "", [], "упак", ""),
    ]


def test_an_offers_package_of_changes_retires_nothing(tmp_path):
    path = tmp_path / "offers.xml"
    path.write_text(OFFERS.format(changes="true"), encoding="utf-8")
    assert not read_catalogue(path).full


def test_an_offers_package_is_bounded_like_a_catalogue(tmp_path):
    path = tmp_path / "offers.xml"
    path.write_text(OFFERS.format(changes="false"), encoding="utf-8")
    with pytest.raises(CatalogueRefused):
        read_catalogue(path, limits=load_limits(max_rows=1))
    with pytest.raises(CatalogueRefused):
        read_catalogue(path, limits=load_limits(max_elements=20))


def test_a_commerceml_file_with_neither_part_is_refused(tmp_path):
    path = tmp_path / "x.xml"
    path.write_text(
        '<?xml version="1.0"?><КоммерческаяИнформация ВерсияСхемы="2.08">'
        "<Документ/></КоммерческаяИнформация>",
        encoding="utf-8",
    )
    with pytest.raises(CatalogueRefused, match="ПакетПредложений"):
        read_catalogue(path)
