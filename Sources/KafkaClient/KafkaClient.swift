import CRdKafka
