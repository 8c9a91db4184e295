"""client.properties files are read as ``java.util.Properties`` reads them.

The cases marked "OpenJDK" are the inputs and expected values of OpenJDK's own tests in
``test/jdk/java/util/Properties/`` (jdk-18: LoadParsing.java with input.txt, LoadParsing2.java
with testData1 / testData1.dos, LoadSeparators.java, EscapeSpace.java, BlankLines.java,
UnicodeEscape.java), rewritten as Python data.
"""

from __future__ import annotations

import pytest

from airflow_provider_kgroups.client import ConfigurationError
from airflow_provider_kgroups.client.properties import (
    config_from_kafka_properties,
    format_properties,
    parse_properties,
    read_properties_file,
)

# OpenJDK LoadParsing.java: input.txt
LOAD_PARSING_INPUT = "\n".join(
    [
        "# this input file is used for the LoadParsing.java test",
        "# comment ending with slash \\",
        "key1 = value1",
        "key2 = abc\\\\\\",
        "def\\",
        "g\\\\",
        "   key3 =   value3",
        "key4 = :value4",
        " # comment with leading space",
        "#key = comment without line terminator",
    ]
)

# OpenJDK LoadParsing2.java: testData1 (the trailing spaces of key14_asdfa are part of the case)
TEST_DATA_1 = "\n".join(
    [
        "# testcases",
        "key0=abcd\\",
        "",
        "\\",
        "key1=value1",
        "",
        "key2 \\= abcde",
        "key3",
        "",
        "   #key4=abcde",
        "key5 ===Arial,ANSI_CHARSET",
        "key6= WingDings,SYMBOL_CHARSET \\\\\\",
        " abc",
        "key7 Symbol,SYMBOL_CHARSET \\",
        "",
        "\tkeyabcdef",
        "",
        "key8notassign   abcdef",
        "key9\\ Term=ABCDE",
        "",
        "\\\\:key10=bar",
        "",
        "\\\\\\\\:key11=bar2",
        "",
        "\\\\\\:key12=bar2",
        "",
        "key13dialog.3=",
        "key14_asdfa    ",
        "key15  \\ abcdef",
        "key16\\ b=  \\ abcdef",
        "key17=\\",
        "#bar\\",
        "baz",
        "",
        "",
    ]
)
TEST_DATA_1_EXPECTED = {
    "\\": "key10=bar",
    "\\:key12": "bar2",
    "key16 b": " abcdef",
    "key14_asdfa": "",
    "\\\\": "key11=bar2",
    "key8notassign": "abcdef",
    "key17": "#barbaz",
    "key15": " abcdef",
    "keyabcdef": "",
    "key13dialog.3": "",
    "key7": "Symbol,SYMBOL_CHARSET ",
    "key6": "WingDings,SYMBOL_CHARSET \\abc",
    "key5": "==Arial,ANSI_CHARSET",
    "key3": "",
    "key2": "= abcde",
    "key1": "value1",
    "key9 Term": "ABCDE",
    "key0": "abcd",
}

# OpenJDK EscapeSpace.java: only leading spaces of a value need escaping; trailing ones are kept
ESCAPE_SPACE = (
    "key1=\\ \\ Value1, has leading and trailing spaces\\  \n"
    "key2=Value2,\\ does not have\\ leading or trailing\\ spaces\n"
    "key3=Value3,has,no,spaces\n"
    "key4=Value4, does not have leading spaces\\  \n"
    "key5=\\t\\ \\ Value5, has leading tab and no trailing spaces\n"
    "key6=\\ \\ Value6,doesnothaveembeddedspaces\\ \\ \n"
    "\\ key1\\ test\\ =key1, has leading and trailing spaces  \n"
    "key2\\ test=key2, does not have leading or trailing spaces\n"
    "key3test=key3,has,no,spaces\n"
    "key4\\ test\\ =key4, does not have leading spaces  \n"
    "\\t\\ key5\\ test=key5, has leading tab and no trailing spaces\n"
    "\\ \\ key6\\ \\ =\\  key6,doesnothaveembeddedspaces  "
)
ESCAPE_SPACE_EXPECTED = {
    "key1": "  Value1, has leading and trailing spaces  ",
    "key2": "Value2, does not have leading or trailing spaces",
    "key3": "Value3,has,no,spaces",
    "key4": "Value4, does not have leading spaces  ",
    "key5": "\t  Value5, has leading tab and no trailing spaces",
    "key6": "  Value6,doesnothaveembeddedspaces  ",
    " key1 test ": "key1, has leading and trailing spaces  ",
    "key2 test": "key2, does not have leading or trailing spaces",
    "key3test": "key3,has,no,spaces",
    "key4 test ": "key4, does not have leading spaces  ",
    "\t key5 test": "key5, has leading tab and no trailing spaces",
    "  key6  ": "  key6,doesnothaveembeddedspaces  ",
}


def test_openjdk_load_parsing():
    assert parse_properties(LOAD_PARSING_INPUT) == {
        "key1": "value1",
        "key2": "abc\\defg\\",
        "key3": "value3",
        "key4": ":value4",
    }


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["testData1", "testData1.dos"])
def test_openjdk_load_parsing2_test_data_1(newline):
    assert parse_properties(TEST_DATA_1.replace("\n", newline)) == TEST_DATA_1_EXPECTED


def test_openjdk_load_separators_and_blank_lines():
    assert parse_properties("Test3==") == {"Test3": "="}  # LoadSeparators.java
    assert parse_properties(" ") == {}  # BlankLines.java


def test_openjdk_escape_space():
    assert parse_properties(ESCAPE_SPACE) == ESCAPE_SPACE_EXPECTED
    assert (
        parse_properties(format_properties(ESCAPE_SPACE_EXPECTED)) == ESCAPE_SPACE_EXPECTED
    )  # stored, reloaded


def test_openjdk_unicode_escape_too_short_is_refused():
    with pytest.raises(ConfigurationError, match="malformed \\\\uXXXX escape"):
        parse_properties("a=b\nb=\\u0\n")  # UnicodeEscape.java: Java throws IllegalArgumentException


def test_the_kafka_cases_of_issue_29(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text(
        "bootstrap.servers: k1:9092,k2:9092\n"
        "security.protocol SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.username = app\n"
        "password=p\\=q\n"
        "sasl.password=p\\=q\\:r\\\\s\\u00e9\n"
        "ssl.ca.location=C:\\\\certs\\\\ca.pem\n"
        "! a comment in Java's other style\n"
        "client.id=kgroups-\\\n"
        "        admin\n"
    )
    props = read_properties_file(str(path))
    assert props["bootstrap.servers"] == "k1:9092,k2:9092"
    assert props["security.protocol"] == "SASL_SSL"
    assert props["sasl.username"] == "app"
    assert props["password"] == "p=q"
    assert props["sasl.password"] == "p=q:r\\s\u00e9"
    assert props["ssl.ca.location"] == "C:\\certs\\ca.pem"
    assert props["client.id"] == "kgroups-admin"
    props.pop("password")
    props.pop("ssl.ca.location")  # a path on a Windows machine
    config = config_from_kafka_properties(props)
    assert [str(b) for b in config.bootstrap_servers] == ["k1:9092", "k2:9092"]
    assert config.sasl_password == "p=q:r\\s\u00e9"


def test_a_file_trims_values_as_kafkas_configdef_does(tmp_path):
    """Java keeps a value's trailing spaces (EscapeSpace above); Kafka's ConfigDef then trims
    every string and password value, so a client.properties file means the trimmed value."""
    path = tmp_path / "client.properties"
    path.write_text("client.id=kgroups  \t\nsasl.password=\\ secret\\ \n")
    assert read_properties_file(str(path)) == {"client.id": "kgroups", "sasl.password": "secret"}


def test_a_malformed_escape_in_a_file_names_the_file_not_the_secret(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("sasl.password=hunter\\u12\n")
    with pytest.raises(ConfigurationError, match="client.properties.*malformed") as caught:
        read_properties_file(str(path))
    assert "hunter" not in str(caught.value)


def test_written_properties_read_back_to_the_same_values(tmp_path):
    """The Spark data source writes a client's settings for its executors: every value that
    Java's syntax would change (backslashes, '=', ':', '#', '!', non-ASCII) survives the trip."""
    values = {
        "sasl.password": "a\\b=c:d#e!f \u00e9\u4e2d",
        "ssl.ca.location": "C:\\certs\\ca.pem",
        "client.id": "#not-a-comment",
    }
    path = tmp_path / "out.properties"
    path.write_text(format_properties(values), encoding="utf-8")
    assert read_properties_file(str(path)) == values
